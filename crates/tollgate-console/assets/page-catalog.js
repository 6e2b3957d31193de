// Catalog: what each upstream server offers against the catalog lock.
// Approved entries match the lock; quarantined and blocked ones changed or
// appeared since and wait for an approver; findings are the poisoning
// checks' warnings about a definition (instructions hidden in a tool
// description, for instance) and are shown whole beside the entry they
// concern: severity, check, reason and the offending excerpt with its span.
// Each entry opens to its live description and input schema.
'use strict';

(function (T) {
  const { el } = T;
  const STATES = [['quarantined', 'Quarantined'], ['blocked', 'Blocked'], ['unlisted', 'Unlisted'], ['approved', 'Approved']];
  const APPROVABLE = ['quarantined', 'blocked'];
  const MODE_KIND = { enforce: 'ok', observe: 'warn', off: 'plain' };

  const SEVERITY_KIND = { high: 'bad', medium: 'warn', info: 'plain' };

  // One poisoning finding, whole: how much it matters, which check fired,
  // why, and the offending text with where it is in the definition.
  function finding(f) {
    const span = Array.isArray(f.span) ? ` [${f.span[0]}..${f.span[1]}]` : '';
    return el('div', {
      class: 'finding', testid: 'finding', role: 'note',
      data: { check: f.check, severity: f.severity, kind: f.kind, key: f.key },
    },
    el('p', {},
      T.badge(f.severity || 'finding', SEVERITY_KIND[f.severity]), ' ',
      el('strong', { data: { field: 'check' } }, f.check || 'finding'),
      ' in ', el('code', {}, `${f.kind || ''} ${f.key || ''}`.trim()),
      f.field ? [' at ', el('code', { data: { field: 'where' } }, `${f.field}${span}`)] : null),
    f.reason ? el('p', { data: { field: 'reason' } }, f.reason) : null,
    f.excerpt ? el('pre', { class: 'excerpt', tabindex: '0', data: { field: 'excerpt' } }, f.excerpt) : null);
  }

  // What an approval lets through: the live definition's description and
  // input schema (a prompt's arguments).
  function definition(e) {
    if (e.description === undefined && e.schema === undefined) return null;
    return el('details', { class: 'definition', testid: 'definition', data: { kind: e.kind, name: e.name } },
      el('summary', {}, 'Description and schema'),
      el('h4', {}, 'Description'),
      e.description ? el('p', { class: 'description', data: { field: 'description' } }, e.description)
        : el('p', { class: 'muted' }, 'No description.'),
      el('h4', {}, e.kind === 'prompt' ? 'Arguments' : 'Input schema'),
      e.schema !== null && e.schema !== undefined
        ? el('pre', { class: 'json', tabindex: '0', data: { field: 'schema' } }, JSON.stringify(e.schema, null, 2))
        : el('p', { class: 'muted' }, 'None.'));
  }

  const json = (summary, value) => el('details', { class: 'definition' },
    el('summary', {}, summary), el('pre', { class: 'json' }, JSON.stringify(value, null, 2)));

  function syncText(sync) {
    if (!sync) return 'not synced';
    const parts = [sync.state || 'unknown'];
    if (typeof sync.age_seconds === 'number') parts.push(`last synced ${T.fmt.age(sync.age_seconds)}`);
    if (typeof sync.successes === 'number') parts.push(`${sync.successes} ok / ${sync.failures || 0} failed`);
    return parts.join(' · ');
  }

  T.pages.catalog = function (root) {
    const status = el('div', { role: 'status', class: 'status' });
    const errors = el('div');
    const body = el('div');
    root.append(status, errors, body);
    let me = { can: {} };

    // Where the lock cannot be written here (a read-only mount), the
    // answer is the command that approves the same definition where the
    // lock is kept.
    function readOnly(err) {
      status.replaceChildren(el('div', { class: 'warn-text', testid: 'approve-command', role: 'note' },
        el('p', {}, err.message),
        el('pre', {}, el('code', {}, err.detail.command))));
    }

    // Approves the revision this page shows: the gateway refuses (409) when
    // the live definition or the lock file changed since, and the page is
    // drawn again to show what is there now.
    async function approve(server, entry, button) {
      button.disabled = true;
      try {
        const body = { server, kind: entry.kind, key: entry.name, revision: entry.live_revision };
        const res = await T.api('/console/api/catalog/approve', { body });
        const a = res.approved || {};
        status.replaceChildren(el('p', { class: 'ok-text', testid: 'approved' },
          `Approved ${a.kind} ${a.key} on ${a.server} at revision ${a.revision}.`));
        T.clearError(errors);
        await load();
      } catch (err) {
        button.disabled = false;
        if (err.code === 'lock_read_only' && err.detail.command) {
          T.clearError(errors);
          readOnly(err);
          return;
        }
        T.showError(errors, err);
        if (err.code === 'stale_revision') await load().catch(() => {});
      }
    }

    function entriesTable(server, state, label, entries, findings) {
      const canApprove = me.can && me.can.approve && APPROVABLE.includes(state);
      const columns = [
        { label: 'Kind', value: (e) => T.value(e.kind) },
        {
          label: 'Name',
          value: (e) => [el('code', {}, e.name), definition(e),
            findings.filter((f) => f.kind === e.kind && f.key === e.name).map(finding)],
        },
        { label: 'Live revision', value: (e) => T.revision(e.live_revision) },
        { label: 'Approved revision', value: (e) => T.revision(e.approved_revision) },
        { label: 'Approved by', value: (e) => T.value(e.approved_by) },
        { label: 'Approved at', value: (e) => T.time(e.approved_at) },
      ];
      if (canApprove) {
        columns.push({
          label: 'Action',
          value: (e) => el('button', {
            type: 'button',
            testid: `approve-${server}-${e.kind}-${e.name}`,
            'aria-label': `Approve ${e.kind} ${e.name}`,
            on: { click: (ev) => approve(server, e, ev.currentTarget) },
          }, 'Approve'),
        });
      }
      return T.table({
        caption: `${label} (${entries.length})`,
        testid: `catalog-${server}-${state}`,
        rows: entries,
        rowAttrs: (e) => (APPROVABLE.includes(state) ? { testid: `entry-${server}-${e.kind}-${e.name}`, data: { state } } : { data: { state } }),
        columns,
      });
    }

    function diffView(diff) {
      const added = diff.added || [];
      const changed = diff.changed || [];
      const removed = diff.removed || [];
      if (!added.length && !changed.length && !removed.length) return el('p', { class: 'muted' }, 'The live catalog matches the lock.');
      return el('ul', { class: 'diff' },
        added.map((a) => el('li', { data: { change: 'added' } },
          T.badge('added', 'warn'), ' ', `${a.kind} `, el('code', {}, a.key), a.revision ? ` at revision ${a.revision}` : '',
          (a.findings || []).map(finding),
          a.definition !== undefined ? json('New definition', a.definition) : null)),
        changed.map((c) => el('li', { data: { change: 'changed' } },
          T.badge('changed', 'warn'), ' ', `${c.kind} `, el('code', {}, c.key),
          typeof c.to !== 'object' ? ` from revision ${T.fmt.int(c.from)} to ${T.fmt.int(c.to)}` : '',
          (c.changes || []).length ? el('ul', {}, c.changes.map((ch) => el('li', {}, typeof ch === 'object' ? JSON.stringify(ch) : String(ch)))) : null,
          (c.findings || []).map(finding),
          c.definition !== undefined ? json('New definition', c.definition)
            : c.to !== null && typeof c.to === 'object' ? json('New definition', c.to) : null)),
        removed.map((r) => el('li', { data: { change: 'removed' } },
          T.badge('removed', 'plain'), ' ',
          typeof r === 'object' && r !== null ? [`${r.kind || ''} `, el('code', {}, r.key || r.name || JSON.stringify(r))] : String(r))));
    }

    function serverSection(name, s) {
      const findings = s.findings || [];
      const listed = new Set();
      for (const [state] of STATES) for (const e of s[state] || []) listed.add(`${e.kind}\u0000${e.name}`);
      const loose = findings.filter((f) => !listed.has(`${f.kind}\u0000${f.key}`));
      const section = T.section(name, { class: 'card server', testid: `catalog-${name}`, data: { mode: s.mode } },
        el('p', {}, 'Mode ', T.badge(s.mode, MODE_KIND[s.mode]), ' · sync ', el('span', { data: { field: 'sync' } }, syncText(s.sync)),
          s.sync && s.sync.last_error ? el('span', { class: 'bad-text' }, ` · last error: ${s.sync.last_error}`) : null),
        T.kv({
          versions: s.versions,
          ...Object.fromEntries(STATES.map(([state]) => [state, (s[state] || []).length])),
          findings: findings.length,
        }),
        loose.length ? el('div', { class: 'findings' }, loose.map(finding)) : null);
      for (const [state, label] of STATES) {
        const entries = s[state] || [];
        if (entries.length) section.append(entriesTable(name, state, label, entries, findings));
      }
      if (s.diff) section.append(el('h3', {}, 'Changes since the lock'), diffView(s.diff));
      return section;
    }

    async function load() {
      const [who, data] = await Promise.all([T.me(), T.api('/console/api/catalog')]);
      me = who;
      const lock = data.lock || {};
      const servers = Object.entries(data.servers || {});
      body.replaceChildren(
        T.section('Catalog lock', { testid: 'catalog-lock' }, T.kv(lock)),
        ...(servers.length ? servers.map(([name, s]) => serverSection(name, s))
          : [el('p', { class: 'muted' }, 'No upstream server has a catalog yet.')]));
    }

    return load();
  };
}(window.Tollgate));

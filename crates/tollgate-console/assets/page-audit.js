// Audit: search the audit log, export what matched, and open one call to
// see the five answers Tollgate records for it (which server, which tool,
// who called, which policies decided, what came back) and whether the
// audit file's hash chain still verifies.
'use strict';

(function (T) {
  const { el } = T;

  const DECISIONS = [['', 'Any'], ['allow', 'Allow'], ['deny', 'Deny'],
    ['observe_deny', 'Deny (observe mode)'], ['not_evaluated', 'Not evaluated']];
  const ORDERS = [['newest', 'Newest first'], ['oldest', 'Oldest first']];
  // The selects among the fields: their options and default.
  const SELECTS = { decision: [DECISIONS, ''], order: [ORDERS, 'newest'] };

  // [name, label, input attributes]; the names are the API's parameters.
  const FIELDS = [
    ['subject', 'Subject', {}],
    ['team', 'Team', {}],
    ['server', 'Server', {}],
    ['tool', 'Tool', {}],
    ['decision', 'Decision', null],
    ['status', 'Status', { type: 'number', min: 100, max: 599, inputmode: 'numeric' }],
    ['trace', 'Trace ID', {}],
    ['since', 'Since', { type: 'datetime-local', step: 1 }],
    ['until', 'Until', { type: 'datetime-local', step: 1 }],
    ['limit', 'Limit', { type: 'number', min: 1, inputmode: 'numeric', placeholder: '100' }],
    ['order', 'Order', null],
  ];
  const TIMES = ['since', 'until'];

  // datetime-local (the browser's zone) <-> RFC 3339 in UTC.
  function toUtc(local) {
    const d = new Date(local);
    return local && !Number.isNaN(d.getTime()) ? d.toISOString().replace('.000Z', 'Z') : '';
  }
  function toLocal(rfc3339) {
    const d = new Date(rfc3339);
    if (!rfc3339 || Number.isNaN(d.getTime())) return '';
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  // With a fleet store a record names the replica that wrote it.
  const callHref = (ref) => `/console/audit/call?${T.query(ref.replica
    ? { replica: ref.replica, file: ref.file, line: ref.line } : { file: ref.file, line: ref.line })}`;

  // A refused or failed call's JSON-RPC error code and the gateway's error
  // class (the trail keeps no message text); '' when it had none.
  function errorText(record) {
    const code = record.rpc_error ?? null;
    return [code === null ? null : String(code), record.error || null].filter(Boolean).join(' ');
  }

  function resultsTable(records) {
    const fleet = records.some(({ ref }) => ref && ref.replica);
    const replica = { label: 'Replica', value: ({ ref }) => el('code', { testid: 'replica' }, ref.replica) };
    return T.table({
      caption: 'Matching calls',
      testid: 'audit-results',
      rows: records,
      empty: 'No calls match these filters.',
      columns: [
        { label: 'Time', value: ({ ref, record }) => el('a', { href: callHref(ref), testid: 'call-link' }, T.time(record.time)) },
        ...(fleet ? [replica] : []),
        { label: 'Subject', value: ({ record }) => (record.principal && record.principal.subject) || T.value(null) },
        { label: 'Team', value: ({ record }) => el('span', { testid: 'team' }, T.value(record.principal && record.principal.team)) },
        { label: 'Server', value: ({ record }) => T.value(record.virtual_server || record.route) },
        { label: 'Method', value: ({ record }) => T.value(record.method) },
        { label: 'Name', value: ({ record }) => T.value(record.name) },
        { label: 'Decision', value: ({ record }) => decisionBadge(record.decision && record.decision.outcome) },
        { label: 'Status', numeric: true, value: ({ record }) => T.num(record.status) },
        {
          label: 'Error',
          value: ({ record }) => (errorText(record)
            ? el('code', { class: 'bad-text', testid: 'rpc-error', data: { code: record.rpc_error ?? '' } }, errorText(record))
            : T.value(null)),
        },
        { label: 'Tokens (est.)', numeric: true, value: ({ record }) => T.num(record.tokens) },
        { label: 'Duration (ms)', numeric: true, value: ({ record }) => T.num(record.duration_us, T.fmt.ms(record.duration_us)) },
      ],
    });
  }

  function decisionBadge(outcome) {
    const kind = outcome === 'allow' ? 'ok' : outcome === 'deny' ? 'bad' : outcome === 'observe_deny' ? 'warn' : 'plain';
    return T.badge(outcome, kind);
  }

  T.pages.audit = function (root) {
    const controls = {};
    const fields = FIELDS.map(([name, label, attrs]) => {
      controls[name] = attrs ? T.input(name, attrs) : T.select(name, ...SELECTS[name]);
      const hint = TIMES.includes(name) ? 'Your local time' : null;
      return T.field(label, controls[name], hint);
    });
    const button = el('button', { type: 'submit', class: 'primary', testid: 'audit-search' }, 'Search');
    const form = el('form', { class: 'search', role: 'search', 'aria-label': 'Audit search', testid: 'audit-form' },
      el('div', { class: 'grid' }, fields), el('div', { class: 'actions' }, button));

    const jsonl = el('a', { testid: 'export-jsonl', download: true }, 'JSON Lines');
    const csv = el('a', { testid: 'export-csv', download: true }, 'CSV');
    const exports = el('p', { class: 'exports' }, 'Export every call matching the filters: ', jsonl, ' · ', csv);
    const idle = () => el('p', { class: 'muted' }, 'Leave the filters empty to list the latest calls.');
    const results = el('div', { class: 'results' }, idle());
    root.append(form, exports, results);

    function filters() {
      const params = {};
      for (const [name] of FIELDS) {
        const v = controls[name].value.trim();
        // The default order stays out of the address.
        params[name] = TIMES.includes(name) ? toUtc(v) : name === 'order' && v === 'newest' ? '' : v;
      }
      return params;
    }

    function setExports(params) {
      jsonl.href = `/console/api/audit/export?${T.query({ format: 'jsonl', ...params })}`;
      csv.href = `/console/api/audit/export?${T.query({ format: 'csv', ...params })}`;
    }

    async function search(params) {
      setExports(params);
      button.disabled = true;
      results.setAttribute('aria-busy', 'true');
      try {
        const data = await T.api('/console/api/audit', { params });
        const records = data.records || [];
        results.replaceChildren(
          el('p', { class: 'summary', testid: 'audit-took', data: { value: data.took_ms } },
            el('span', { testid: 'audit-count', data: { value: records.length } }, String(records.length)),
            ` ${records.length === 1 ? 'call' : 'calls'} in ${data.took_ms} ms`,
            data.truncated ? el('span', { class: 'warn-text', testid: 'audit-truncated' },
              ' — more calls match: narrow the filters or raise the limit') : null),
          resultsTable(records));
      } catch (err) {
        results.replaceChildren();
        T.showError(results, err);
      } finally {
        button.disabled = false;
        results.removeAttribute('aria-busy');
      }
    }

    function fillFromUrl() {
      const url = T.urlParams();
      let any = false;
      for (const [name] of FIELDS) {
        const v = url.get(name) || '';
        if (v) any = true;
        controls[name].value = TIMES.includes(name) ? toLocal(v) : v || (SELECTS[name] ? SELECTS[name][1] : '');
      }
      return any;
    }

    function submit() {
      const params = filters();
      T.setUrl(params, true);
      search(params);
    }
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      submit();
    });
    // Turning the order round searches again at once.
    controls.order.addEventListener('change', submit);
    window.addEventListener('popstate', () => {
      if (fillFromUrl()) {
        search(filters());
      } else {
        setExports({});
        results.replaceChildren(idle());
      }
    });

    if (fillFromUrl()) search(filters());
    else setExports({});
  };

  // ---- One call -------------------------------------------------------------

  const ANSWERS = [
    ['server', 'Which server', 'answer-server'],
    ['tool', 'Which tool', 'answer-tool'],
    ['principal', 'Who called', 'answer-principal'],
    ['policies', 'Which policies decided', 'answer-policies'],
    ['outcome', 'What came back', 'answer-outcome'],
  ];

  function policyList(policies) {
    if (!policies || policies.length === 0) return 'none';
    return el('ul', { class: 'policies' }, policies.map((p) => el('li', { data: { policy: p.id } },
      el('code', {}, p.id),
      p.source ? el('pre', { class: 'source' }, p.source) : null)));
  }

  function answer(key, title, testid, value) {
    if (value === null || value === undefined) {
      const why = key === 'principal' ? 'Nobody: the call carried no credentials Tollgate accepted.' : 'Not recorded.';
      return T.section(title, { testid }, el('p', { class: 'muted' }, why));
    }
    const render = key === 'policies' ? { policies: policyList } : undefined;
    // Without prices there is no cost to show.
    const skip = key === 'outcome' && !value.currency ? ['cost', 'currency'] : undefined;
    return T.section(title, { testid }, T.kv(value, { render, skip }));
  }

  function chainState(ref, chain) {
    const ok = chain && chain.verified;
    const text = ok ? 'verified' : `broken: ${(chain && chain.error) || 'the hash chain does not verify'}`;
    const where = ref.replica ? ['Replica ', el('code', { testid: 'chain-replica' }, ref.replica), ', audit file '] : ['Audit file '];
    const scope = chain && chain.source === 'store' ? ' (as stored in the fleet store, up to this line)' : '';
    return el('p', { class: 'chain' },
      ...where, el('code', {}, ref.file), `, line ${ref.line}. Hash chain${scope}: `,
      el('strong', { class: ok ? 'ok-text' : 'bad-text', testid: 'chain', data: { verified: String(!!ok) } }, text),
      chain && typeof chain.records === 'number' ? ` (${chain.records} records checked)` : null);
  }

  // What a refused or failed call answered, above its five answers.
  function callError(record) {
    if (!errorText(record)) return null;
    const code = record.rpc_error ?? null;
    return el('p', { class: 'call-error', testid: 'call-error', data: { code: code ?? '' } },
      code === null ? 'Failed' : ['JSON-RPC error ', el('code', {}, String(code))],
      record.error ? [' · ', el('code', {}, record.error)] : null,
      record.status ? ` · HTTP ${record.status}` : null);
  }

  T.pages.call = async function (root) {
    const url = T.urlParams();
    const replica = url.get('replica');
    const file = url.get('file');
    const line = url.get('line');
    root.append(el('p', {}, el('a', { href: '/console/audit' }, '← Audit search')));
    if (!file || !line) throw new Error('Open a call from the audit search: this page needs a file and a line.');

    const [me, call] = await Promise.all([T.me(), T.api('/console/api/audit/call', { params: replica ? { replica, file, line } : { file, line } })]);
    const record = call.record || {};
    const answers = call.answers || {};

    const what = [record.method, record.name].filter(Boolean).join(' ');
    root.append(
      el('p', { class: 'lede' }, T.time(record.time), what ? ` · ${what}` : '',
        record.request_id ? [' · request ', el('code', {}, record.request_id)] : null),
      callError(record),
      chainState(call.ref || { file, line }, call.chain),
      el('div', { class: 'answers' }, ANSWERS.map(([key, title, testid]) => answer(key, title, testid, answers[key]))));

    let capture;
    if (call.capture !== undefined && call.capture !== null) {
      capture = el('pre', { testid: 'capture', class: 'json' }, JSON.stringify(call.capture, null, 2));
    } else if (!me.can || !me.can.captures) {
      capture = el('p', { testid: 'capture-hidden', class: 'muted' }, 'Captured payloads are visible to auditors only.');
    } else {
      capture = el('p', { class: 'muted' }, 'No payload was captured for this call.');
    }
    root.append(T.section('Captured payload', {}, capture),
      el('details', { class: 'raw' }, el('summary', {}, 'Raw audit record'),
        el('pre', { class: 'json', testid: 'raw-record' }, JSON.stringify(record, null, 2))));
  };
}(window.Tollgate));

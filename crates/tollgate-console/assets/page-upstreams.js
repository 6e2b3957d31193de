// Upstreams: the MCP servers behind the gateway with their calls, error
// rate and latency over the last hour (from the audit index, as the
// overview's "By server" table), circuit breakers, concurrency and catalog
// sync, plus the virtual servers with the names their members collide on, the
// rate-limit store, the fleet store's replicas (shipping and signed
// checkpoints) and the MCP sessions Tollgate holds; refreshed every
// 5 seconds while the tab is visible.
'use strict';

(function (T) {
  const { el } = T;
  const BREAKER_KIND = { closed: 'ok', half_open: 'warn', open: 'bad' };

  function syncCell(sync) {
    if (!sync || typeof sync !== 'object') return T.value(sync);
    const parts = [sync.state || 'unknown'];
    if (typeof sync.age_seconds === 'number') parts.push(T.fmt.age(sync.age_seconds));
    return [parts.join(' · '), sync.last_error ? el('div', { class: 'bad-text' }, sync.last_error) : null];
  }

  // A column of the upstream's traffic over the window.
  const traffic = (label, key, text) => ({
    label,
    numeric: true,
    value: (u) => {
      const raw = (u.traffic || {})[key];
      return T.num(raw, text(raw), { 'data-field': key });
    },
  });

  function upstreamsTable(upstreams, window) {
    const hour = window === 3600 ? 'last hour' : `last ${T.fmt.int(window)} s`;
    return T.table({
      caption: `Calls, errors and latency (${hour}), breakers, concurrency and catalog sync per upstream`,
      testid: 'upstreams-table',
      rows: upstreams,
      empty: 'No upstream servers are configured.',
      rowAttrs: (u) => ({ data: { upstream: u.name, breaker: u.breaker ?? 'none' } }),
      columns: [
        { label: 'Name', value: (u) => el('code', {}, u.name) },
        { label: 'URL', value: (u) => T.value(u.url) },
        traffic('Calls', 'calls', T.fmt.int),
        traffic('Errors', 'failed', T.fmt.int),
        traffic('Error rate', 'error_rate', T.fmt.percent),
        traffic('p50 ms', 'p50_us', T.fmt.ms),
        traffic('p99 ms', 'p99_us', T.fmt.ms),
        { label: 'Breaker', value: (u) => (u.breaker ? T.badge(u.breaker.replace('_', ' '), BREAKER_KIND[u.breaker]) : 'none') },
        T.intColumn('In flight', 'in_flight'),
        T.intColumn('Max concurrent', 'max_concurrent'),
        { label: 'Catalog sync', value: (u) => syncCell(u.sync) },
      ],
    });
  }

  // The names two or more members claim: left out of the virtual server
  // until the configuration or a catalog changes.
  function collisions(v) {
    const list = v.collided || [];
    if (!list.length) return el('p', { class: 'muted' }, 'No name collisions.');
    return [el('p', { class: 'warn-text' }, `Left out, claimed by more than one member (${list.length}):`),
      el('ul', { class: 'collisions', testid: 'collisions' }, list.map((c) => el('li', { data: { kind: c.kind, name: c.name } },
        `${c.kind} `, el('code', {}, c.name), ' from ',
        (c.members || []).flatMap((m, i) => [i ? ' and ' : '', el('code', { data: { member: m } }, m)]))))];
  }

  function virtualServer(name, v) {
    const { collided, ...rest } = v;
    return el('div', { class: 'sub', data: { virtualServer: name } }, el('h3', {}, name), T.kv(rest), collisions(v));
  }

  function checkpointCell(cp) {
    if (!cp) return el('span', { class: 'muted' }, 'none');
    const sig = cp.signature || {};
    return [
      `${T.fmt.time(cp.time)} · ${cp.file}:${cp.line}`,
      ' ',
      sig.valid ? T.badge('signature valid', 'ok') : T.badge('signature not valid', 'bad'),
      sig.problem ? el('div', { class: 'bad-text' }, sig.problem) : null,
    ];
  }

  function fleetTable(fleet) {
    if (!fleet.store) {
      return el('p', { class: 'muted' }, 'No fleet store: this replica\'s audit trail and approvals are its own.');
    }
    return T.table({
      caption: 'Each replica\'s audit shipping and newest signed checkpoint',
      testid: 'fleet-table',
      rows: fleet.replicas || [],
      empty: 'No replica has shipped to the fleet store yet.',
      rowAttrs: (r) => ({ data: { replica: r.replica } }),
      columns: [
        { label: 'Replica', value: (r) => el('code', {}, r.replica) },
        T.intColumn('Files', 'files'),
        T.intColumn('Lines shipped', 'lines'),
        { label: 'Last shipped', value: (r) => (r.updated_at ? T.fmt.time(r.updated_at) : 'never') },
        { label: 'Newest checkpoint', value: (r) => checkpointCell(r.checkpoint) },
      ],
    });
  }

  T.pages.upstreams = function (root) {
    const status = el('p', { class: 'live', 'aria-live': 'off' }, 'Loading…');
    const errors = el('div');
    const live = el('div', { 'aria-live': 'off' });
    root.append(status, errors, live);

    function draw([data, fleet]) {
      const virtual = Object.entries(data.virtual_servers || {});
      live.replaceChildren(
        T.section('Upstream servers', {}, upstreamsTable(data.upstreams || [], data.traffic_window_seconds || 3600)),
        T.section('Virtual servers', { testid: 'virtual-servers' },
          virtual.length
            ? virtual.map(([name, v]) => virtualServer(name, v))
            : el('p', { class: 'muted' }, 'No virtual servers are configured.')),
        T.section('Rate-limit store', { testid: 'limit-store' },
          data.limit_store ? T.kv(data.limit_store) : el('p', { class: 'muted' }, 'No shared rate-limit store: limits are kept in this process.')),
        T.section('Fleet store', { testid: 'fleet-store' }, fleetTable(fleet)),
        T.section('Sessions', { testid: 'sessions' }, T.kv(data.sessions)));
    }

    const load = () => Promise.all([T.api('/console/api/upstreams'), T.api('/console/api/fleet')]);
    T.live(load, draw, errors, status);
  };
}(window.Tollgate));

// Upstreams: the MCP servers behind the gateway with their circuit
// breakers, concurrency and catalog sync, plus the virtual servers, the
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

  function upstreamsTable(upstreams) {
    return T.table({
      caption: 'Breakers, concurrency and catalog sync per upstream',
      testid: 'upstreams-table',
      rows: upstreams,
      empty: 'No upstream servers are configured.',
      rowAttrs: (u) => ({ data: { upstream: u.name, breaker: u.breaker ?? 'none' } }),
      columns: [
        { label: 'Name', value: (u) => el('code', {}, u.name) },
        { label: 'URL', value: (u) => T.value(u.url) },
        { label: 'Breaker', value: (u) => (u.breaker ? T.badge(u.breaker.replace('_', ' '), BREAKER_KIND[u.breaker]) : 'none') },
        T.intColumn('In flight', 'in_flight'),
        T.intColumn('Max concurrent', 'max_concurrent'),
        { label: 'Catalog sync', value: (u) => syncCell(u.sync) },
      ],
    });
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
        T.section('Upstream servers', {}, upstreamsTable(data.upstreams || [])),
        T.section('Virtual servers', { testid: 'virtual-servers' },
          virtual.length
            ? virtual.map(([name, v]) => el('div', { class: 'sub', data: { virtualServer: name } }, el('h3', {}, name), T.kv(v)))
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

// Overview: live traffic through the gateway over a window (15 min, 1 h,
// 24 h), refreshed every 5 seconds while the tab is visible.
'use strict';

(function (T) {
  const { el } = T;
  const WINDOWS = [['15m', 'Last 15 minutes'], ['1h', 'Last hour'], ['24h', 'Last 24 hours']];

  // Links a usage key to the audit search for it: "server" or "server/tool".
  function auditLink(key, isTool) {
    if (isTool && key.startsWith('(')) return key; // "(tools/list)": a method, no tool to search for
    const slash = isTool ? key.indexOf('/') : -1;
    const params = slash > 0
      ? { server: key.slice(0, slash), tool: key.slice(slash + 1) }
      : { server: key };
    return el('a', { href: `/console/audit?${T.query(params)}` }, key);
  }

  function usageTable(caption, keyLabel, rows, isTool, testid) {
    return T.table({
      caption,
      testid,
      rows,
      empty: 'No calls in this window.',
      columns: [
        { label: keyLabel, value: (r) => auditLink(r.key, isTool) },
        T.intColumn('Calls', 'calls'),
        T.intColumn('Errors (not denials)', 'failed'),
        T.intColumn('Denials', 'denied'),
        T.msColumn('p50 (ms)', 'p50_us'),
        T.msColumn('p99 (ms)', 'p99_us'),
      ],
    });
  }

  T.pages.overview = function (root) {
    const asked = T.urlParams().get('window');
    const select = T.select('window', WINDOWS, WINDOWS.some(([w]) => w === asked) ? asked : '1h');
    const status = el('p', { class: 'live', testid: 'live', 'aria-live': 'off' }, 'Loading…');
    const controls = el('form', { class: 'controls', on: { submit: (e) => e.preventDefault() } },
      T.field('Window', select), status);
    const errors = el('div');

    // Numbers that change every few seconds are not read out each time.
    const live = el('div', { 'aria-live': 'off' });
    const tiles = el('div', { class: 'tiles' });
    const traffic = T.section('Traffic');
    const chart = T.chart(traffic, {
      label: 'Calls, errors (not denials) and denials over time',
      series: [{ label: 'Calls', key: 'calls' }, { label: 'Errors (not denials)', key: 'errors' }, { label: 'Denials', key: 'denied' }],
    });
    const servers = T.section('By server');
    const tools = T.section('By tool');
    const tables = el('div', { class: 'columns' }, servers, tools);
    live.append(tiles, traffic, tables);
    root.append(controls, errors, live);

    function draw(data) {
      const t = data.totals || {};
      tiles.replaceChildren(
        T.tile({ label: 'Calls', raw: t.calls, testid: 'stat-calls' }),
        // A denial is answered with a JSON-RPC error too: errors are shown
        // without the denials, which have their own tile.
        T.tile({ label: 'Errors (not denials)', raw: t.failed, testid: 'stat-errors', hint: `${T.fmt.int(t.errors)} errors with the denials` }),
        T.tile({ label: 'Denials', raw: t.denied, testid: 'stat-denied' }),
        T.tile({ label: 'p99 latency', raw: t.p99_us, text: T.fmt.ms(t.p99_us), unit: 'ms', testid: 'stat-p99', hint: `p50 ${T.fmt.ms(t.p50_us)} ms` }));
      const series = data.series || [];
      chart.set(series.map((p) => p.t), [series.map((p) => p.calls), series.map((p) => p.failed), series.map((p) => p.denied)]);
      servers.replaceChildren(servers.firstChild,
        usageTable('Calls per server', 'Server', data.servers || [], false, 'overview-servers'));
      tools.replaceChildren(tools.firstChild,
        usageTable('Calls per tool', 'Tool', data.tools || [], true, 'overview-tools'));
    }

    const load = () => T.api('/console/api/overview', { params: { window: select.value } });
    const poll = T.live(load, draw, errors, status);

    select.addEventListener('change', () => {
      T.setUrl({ window: select.value === '1h' ? '' : select.value });
      poll.now();
    });
  };
}(window.Tollgate));

// Spend: calls, tokens and cost grouped by team, cost centre, subject,
// server or tool over the last day, week or month; the tokens spent on
// sending tool catalogs to clients shown apart; and the budgets with
// their projection to the end of their period.
'use strict';

(function (T) {
  const { el } = T;

  const BY = [['team', 'Team'], ['cost_center', 'Cost centre'], ['subject', 'Subject'], ['server', 'Server'], ['tool', 'Tool']];
  const PERIODS = [['day', 'Last 24 hours'], ['week', 'Last 7 days'], ['month', 'Last 30 days']];
  const pick = (options, value, fallback) => (options.some(([v]) => v === value) ? value : fallback);
  const labelOf = (options, value) => (options.find(([v]) => v === value) || [value, value])[1];

  function costText(cost, currency) {
    return typeof cost === 'number' ? T.fmt.cost(cost, currency) : T.fmt.int(null);
  }

  function rowsTable(data) {
    const currency = data.currency;
    const cost = { label: `Cost (${currency})`, numeric: true, value: (r) => T.num(r.cost, costText(r.cost)) };
    return T.table({
      caption: `Usage by ${labelOf(BY, data.by).toLowerCase()}`,
      testid: 'spend-table',
      rows: data.rows || [],
      foot: data.total,
      empty: 'No calls in this period.',
      columns: [
        { label: labelOf(BY, data.by), value: (r) => T.value(r.key) },
        T.intColumn('Calls', 'calls'),
        T.intColumn('Errors', 'errors'),
        T.intColumn('Denials', 'denied'),
        T.intColumn('Tokens (est.)', 'tokens'),
        T.intColumn('Catalog tokens (est.)', 'catalog_tokens'),
        { label: 'Bytes in', numeric: true, value: (r) => T.num(r.bytes_in, T.fmt.bytes(r.bytes_in)) },
        { label: 'Bytes out', numeric: true, value: (r) => T.num(r.bytes_out, T.fmt.bytes(r.bytes_out)) },
        ...(priced(data) ? [cost] : []),
      ],
    });
  }

  // Whether prices are configured: without them there is no cost to show.
  const priced = (data) => data.prices ?? Boolean(data.currency);

  // This period's spend as a share of the limit: a bar and the percent.
  function budgetBar(b) {
    if (typeof b.spent !== 'number' || typeof b.limit !== 'number' || b.limit <= 0) return T.value(null);
    const share = b.spent / b.limit;
    const percent = T.fmt.percent(share);
    return el('span', { class: 'budget-used' },
      el('progress', {
        max: b.limit,
        value: Math.min(b.spent, b.limit),
        testid: 'budget-bar',
        class: share > 1 ? 'over' : null,
        'aria-label': `${b.budget}${b.key ? ` (${b.key})` : ''}: ${percent} of the limit spent`,
        data: { percent: (share * 100).toFixed(1) },
      }),
      el('span', { class: 'budget-percent' }, percent));
  }

  function budgetsTable(budgets, prices) {
    const over = (b) => typeof b.projected === 'number' && typeof b.limit === 'number' && b.projected > b.limit;
    const cost = { label: 'Cost', numeric: true, value: (b) => T.num(b.cost, costText(b.cost, b.currency)) };
    return T.table({
      caption: 'Budgets and their projection to the end of the period (estimated tokens)',
      testid: 'budgets',
      rows: budgets,
      empty: 'No budgets are configured.',
      rowAttrs: (b) => ({ class: over(b) ? 'over' : null, data: { over: String(over(b)), budget: b.budget, key: b.key } }),
      columns: [
        { label: 'Budget', value: (b) => T.value(b.budget) },
        { label: 'Key', value: (b) => T.value(b.key) },
        { label: 'Period', value: (b) => [T.value(b.period), el('br'), el('span', { class: 'muted' }, T.time(b.start), ' – ', T.time(b.end))] },
        { label: 'Used', value: budgetBar },
        { label: 'Spent / limit', numeric: true, value: (b) => [T.num(b.spent, T.fmt.int(b.spent), { data: { field: 'spent', value: b.spent ?? '' } }), ' / ', T.num(b.limit, T.fmt.int(b.limit), { data: { field: 'limit', value: b.limit ?? '' } })] },
        T.intColumn('Remaining', 'remaining'),
        {
          label: 'Projected',
          numeric: true,
          value: (b) => [T.num(b.projected), over(b) ? el('span', { class: 'badge badge-bad' }, 'over limit') : null],
        },
        ...(prices ? [cost] : []),
      ],
    });
  }

  T.pages.spend = function (root) {
    const url = T.urlParams();
    const by = T.select('by', BY, pick(BY, url.get('by'), 'team'));
    const period = T.select('period', PERIODS, pick(PERIODS, url.get('period'), 'day'));
    const csv = el('a', { testid: 'spend-csv', download: true }, 'Download CSV');
    const form = el('form', { class: 'controls', on: { submit: (e) => e.preventDefault() } },
      T.field('Group by', by), T.field('Period', period), el('p', {}, csv));
    const range = el('p', { class: 'muted' });
    const estimates = el('p', { class: 'muted', testid: 'spend-estimates' });
    const errors = el('div');
    const tiles = el('div', { class: 'tiles' });
    const catalog = T.section('Catalog context cost', { class: 'card catalog-cost' });
    const chartSection = T.section('Estimated tokens over time');
    const chart = T.chart(chartSection, {
      label: 'Estimated tokens and catalog tokens per interval',
      bars: true,
      series: [{ label: 'Tokens', key: 'tokens' }, { label: 'Catalog tokens', key: 'catalog' }],
    });
    const chartSummary = el('p', { class: 'muted' });
    chartSection.append(chartSummary);
    const rows = el('div');
    const budgets = T.section('Budgets');
    root.append(form, range, errors, tiles, estimates, catalog, chartSection, T.section('Usage', {}, rows), budgets);

    function draw(data) {
      const total = data.total || {};
      const cat = data.catalog || {};
      range.replaceChildren('From ', T.time(data.since), ' to ', T.time(data.until), '.');
      tiles.replaceChildren(
        T.tile({ label: 'Calls', raw: total.calls, testid: 'spend-calls' }),
        T.tile({ label: 'Tokens (est.)', raw: total.tokens, testid: 'spend-tokens' }),
        ...(priced(data)
          ? [T.tile({ label: 'Cost', raw: total.cost, text: costText(total.cost), unit: data.currency, hint: '', testid: 'spend-cost' })]
          : []));
      estimates.textContent = 'Tokens are estimated from the bytes of each request and answer, not counted by a model.'
        + (priced(data) ? '' : ' No prices are configured ([[limits.prices]]), so no cost is shown.');
      const catTokens = cat.tokens ?? total.catalog_tokens;
      catalog.replaceChildren(catalog.firstChild,
        el('div', { class: 'tiles' },
          T.tile({ label: 'Catalog tokens (est.)', raw: catTokens, testid: 'spend-catalog-tokens' }),
          T.tile({ label: 'Share of all tokens', raw: cat.share, text: T.fmt.percent(cat.share), testid: 'spend-catalog-share', hint: '' })),
        el('p', { class: 'muted' }, 'Tokens spent sending tool, prompt and resource lists to clients, before any call is made.'));

      const series = data.series || [];
      chart.set(series.map((p) => p.t), [series.map((p) => p.tokens), series.map((p) => p.catalog_tokens)]);
      const peak = series.reduce((best, p) => (p.tokens > 0 && !(best && best.tokens >= p.tokens) ? p : best), null);
      chartSummary.textContent = peak
        ? `${series.length} intervals; the busiest began ${T.fmt.time(peak.t)} with ${T.fmt.int(peak.tokens)} tokens (${T.fmt.int(peak.catalog_tokens)} catalog).`
        : 'No tokens in this period.';

      rows.replaceChildren(rowsTable(data));
      budgets.replaceChildren(budgets.firstChild, budgetsTable(data.budgets || [], priced(data)));
    }

    async function load() {
      const params = { by: by.value, period: period.value };
      T.setUrl(params);
      csv.href = `/console/api/spend.csv?${T.query(params)}`;
      try {
        draw(await T.api('/console/api/spend', { params }));
        T.clearError(errors);
      } catch (err) {
        T.showError(errors, err);
      }
    }

    by.addEventListener('change', load);
    period.addEventListener('change', load);
    return load();
  };
}(window.Tollgate));

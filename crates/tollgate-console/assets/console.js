// Tollgate web console: shared code.
//
// The server renders one HTML shell per page with <body data-page="...">.
// Each page-*.js file registers a renderer in Tollgate.pages under that
// name; once the document is parsed the renderer for this page draws into
// #page from the console's JSON API. Everything that comes from the API is
// untrusted (tool names, descriptions and subjects come from users and
// upstream servers), so nodes are built with createElement and textContent,
// never by parsing HTML, and styling lives in console.css only: the console
// is served under a Content-Security-Policy without 'unsafe-inline'.
'use strict';

(function () {
  const T = { pages: {} };
  window.Tollgate = T;

  // ---- DOM ----------------------------------------------------------------

  function append(node, children) {
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) append(node, child);
      else if (child instanceof Node) node.append(child);
      else node.append(document.createTextNode(String(child)));
    }
  }

  // el('a', {href: '/x', class: 'c', testid: 't', data: {field: 'f'},
  //          on: {click: fn}}, 'text', childNode, [more, children])
  T.el = function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === 'class') node.className = value;
      else if (name === 'testid') node.dataset.testid = value;
      else if (name === 'data') {
        for (const [k, v] of Object.entries(value)) {
          if (v !== undefined && v !== null) node.dataset[k] = String(v);
        }
      } else if (name === 'on') {
        for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
      } else if (name === 'style') {
        throw new Error('styles belong in console.css');
      } else if (value === true) node.setAttribute(name, '');
      else node.setAttribute(name, String(value));
    }
    append(node, children);
    return node;
  };
  const el = T.el;

  let nextId = 0;
  T.uid = (prefix) => `${prefix}-${++nextId}`;

  // A section with an <h2>, labelled by it.
  T.section = function (title, attrs, ...children) {
    const id = T.uid('h');
    return el('section', { class: 'card', 'aria-labelledby': id, ...attrs },
      el('h2', { id }, title), ...children);
  };

  // ---- Formatting ---------------------------------------------------------

  const DASH = '—';
  const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });
  const grouped = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });
  // The browser's zone as a short name ("CET", "GMT+5:30"), as of `d`.
  const zoneFormat = new Intl.DateTimeFormat('en', { timeZoneName: 'short' });
  const zoneOf = (d) => (zoneFormat.formatToParts(d).find((p) => p.type === 'timeZoneName') || {}).value || '';

  T.fmt = {
    // Integers with thousands separators ("12,345"); the raw value stays
    // in data-value (T.num, T.tile).
    int: (n) => (typeof n === 'number' ? grouped.format(n) : n === null || n === undefined ? DASH : String(n)),
    // "12.3k" beside a raw number; empty below a thousand.
    human: (n) => (typeof n === 'number' && Math.abs(n) >= 1000 ? compact.format(n) : ''),
    ms: (us) => (typeof us === 'number' ? (us / 1000).toFixed(1) : DASH),
    percent: (share) => (typeof share === 'number' ? `${(share * 100).toFixed(1)}%` : DASH),
    bytes(n) {
      if (typeof n !== 'number') return DASH;
      const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let i = 0;
      while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
      return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
    },
    cost(n, currency) {
      if (typeof n !== 'number') return DASH;
      const text = n !== 0 && Math.abs(n) < 1 ? n.toFixed(4) : n.toFixed(2);
      return currency ? `${text} ${currency}` : text;
    },
    // Local time as YYYY-MM-DD HH:MM:SS and the browser's zone; the raw
    // value is kept on <time>. Every time the console shows comes here.
    time(value) {
      const d = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
      if (value === null || value === undefined || Number.isNaN(d.getTime())) return value ? String(value) : DASH;
      const p = (n) => String(n).padStart(2, '0');
      const zone = zoneOf(d);
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
        `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}${zone ? ` ${zone}` : ''}`;
    },
    age(seconds) {
      if (typeof seconds !== 'number') return DASH;
      if (seconds < 90) return `${Math.round(seconds)} s ago`;
      if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
      if (seconds < 172800) return `${Math.round(seconds / 3600)} h ago`;
      return `${Math.round(seconds / 86400)} d ago`;
    },
  };

  T.time = (value) => (value
    ? el('time', { datetime: value, title: String(value) }, T.fmt.time(value))
    : DASH);

  // A number shown as `text`, its raw API value in data-value.
  T.num = (raw, text, attrs) => el('span', { class: 'num', data: { value: raw ?? '' }, ...attrs },
    text ?? T.fmt.int(raw));

  // A stat tile. The element with data-testid holds the display text and
  // the raw value in data-value; the compact form sits beside it.
  T.tile = function ({ label, raw, text, testid, unit, hint }) {
    const labelId = T.uid('tile');
    return el('div', { class: 'tile', role: 'group', 'aria-labelledby': labelId },
      el('p', { class: 'tile-label', id: labelId }, label),
      el('p', { class: 'tile-value' },
        el('span', { testid, data: { value: raw ?? '' } }, text ?? T.fmt.int(raw)),
        unit ? el('span', { class: 'tile-unit' }, ` ${unit}`) : null),
      el('p', { class: 'tile-hint' }, hint ?? T.fmt.human(raw)));
  };

  T.badge = (text, kind) => el('span', { class: `badge badge-${kind || 'plain'}` }, text ?? DASH);

  const LABELS = {
    rpc_error: 'JSON-RPC error', ttfb: 'Time to first byte', tokens: 'Tokens (est.)', id: 'ID', url: 'URL',
    client_id: 'Client ID', token_id: 'Token ID', request_id: 'Request ID', trace_id: 'Trace ID',
  };
  T.label = function (key) {
    const base = key.endsWith('_us') ? key.slice(0, -3) : key;
    const text = LABELS[base] || base.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());
    return key.endsWith('_us') ? `${text} (ms)` : text;
  };

  // ---- Tables and key/value lists -----------------------------------------

  // columns: [{label, value: row => node|string, numeric}]
  T.table = function ({ caption, columns, rows, testid, rowAttrs, empty, foot }) {
    const wrapId = T.uid('tbl');
    const head = el('tr', {}, columns.map((c) => el('th', { scope: 'col', class: c.numeric ? 'numeric' : null }, c.label)));
    const body = el('tbody');
    for (const row of rows) {
      body.append(el('tr', rowAttrs ? rowAttrs(row) : {},
        columns.map((c) => el('td', { class: c.numeric ? 'numeric' : null }, c.value(row)))));
    }
    if (rows.length === 0) {
      body.append(el('tr', {}, el('td', { colspan: columns.length, class: 'empty' }, empty || 'Nothing to show.')));
    }
    const table = el('table', { testid },
      el('caption', { id: wrapId }, caption), el('thead', {}, head), body);
    if (foot) table.append(el('tfoot', {}, el('tr', {}, columns.map((c, i) => (i === 0
      ? el('th', { scope: 'row' }, c.footLabel || 'Total')
      : el('td', { class: c.numeric ? 'numeric' : null }, c.value(foot)))))));
    // A keyboard-focusable scroll region for narrow screens.
    return el('div', { class: 'table-wrap', role: 'region', 'aria-labelledby': wrapId, tabindex: 0 }, table);
  };

  // A column of raw integers with data-value.
  T.intColumn = (label, key) => ({ label, numeric: true, value: (r) => T.num(r[key]) });
  T.msColumn = (label, key) => ({ label, numeric: true, value: (r) => T.num(r[key], T.fmt.ms(r[key])) });

  // Renders any JSON value for people: scalars as text, arrays of scalars
  // comma separated, objects as nested lists.
  // A definition revision (`sha256:…`) shortened to 12 hex digits, the
  // whole revision in its title.
  T.revision = function (revision) {
    if (!revision) return DASH;
    const short = revision.replace(/^(sha256:[0-9a-f]{12})[0-9a-f]+$/, '$1…');
    return el('code', { title: revision }, short);
  };

  T.value = function (value, key) {
    if (value === null || value === undefined || value === '') return DASH;
    if (typeof value === 'boolean') return value ? 'yes' : 'no';
    if (typeof value === 'number') {
      if (key && key.endsWith('_us')) return T.fmt.ms(value);
      return String(value);
    }
    if (typeof value === 'string') {
      if (key && (key.endsWith('_at') || key === 'time' || key === 'since' || key === 'until')) return T.time(value);
      return value;
    }
    if (Array.isArray(value)) {
      if (value.length === 0) return 'none';
      if (value.every((v) => v === null || typeof v !== 'object')) return value.map(String).join(', ');
      return el('ul', { class: 'plain' }, value.map((v) => el('li', {}, T.value(v))));
    }
    return T.kv(value);
  };

  // A <dl> of an object's fields; each <dd> carries data-field="<key>" and,
  // for scalars, data-value with the raw value. `render` overrides a field.
  T.kv = function (obj, { testid, render, skip } = {}) {
    const dl = el('dl', { class: 'kv', testid });
    for (const [key, value] of Object.entries(obj || {})) {
      if (skip && skip.includes(key)) continue;
      const scalar = value === null || typeof value !== 'object';
      dl.append(el('dt', {}, T.label(key)),
        el('dd', { data: { field: key, value: scalar ? (value ?? '') : null } },
          render && render[key] ? render[key](value, obj) : T.value(value, key)));
    }
    if (!dl.firstChild) dl.append(el('dt', {}, 'Fields'), el('dd', {}, 'none'));
    return dl;
  };

  // ---- Errors ------------------------------------------------------------

  // `detail` is the answer's whole `error` object (e.g. its `command`).
  class ApiError extends Error {
    constructor(status, code, message, detail) {
      super(message);
      this.status = status;
      this.code = code;
      this.detail = detail || {};
    }
  }
  T.ApiError = ApiError;

  T.errorBox = (err) => el('div', { class: 'error', role: 'alert', testid: 'error', data: { code: err && err.code } },
    (err && err.message) || String(err));

  // Shows an error in `slot`, replacing the previous one. The same message
  // is not inserted again, so a failing refresh is announced once.
  T.showError = function (slot, err) {
    const current = slot.querySelector('[data-testid="error"]');
    if (current && current.textContent === err.message) return;
    if (current) current.remove();
    slot.prepend(T.errorBox(err));
  };
  T.clearError = (slot) => slot.querySelectorAll('[data-testid="error"]').forEach((n) => n.remove());

  // ---- API ----------------------------------------------------------------

  const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || '';

  // Query string of the non-empty entries of `params`.
  T.query = function (params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== undefined && v !== null && String(v).trim() !== '') q.set(k, String(v).trim());
    }
    return q.toString();
  };

  // Fetches JSON from the console API. GET unless `body` is given, which is
  // then POSTed as JSON with the CSRF token. Errors become ApiError with
  // the server's message; 401 goes to the sign-in page.
  T.api = async function (path, { params, body } = {}) {
    const qs = T.query(params);
    const init = { method: 'GET', credentials: 'same-origin', headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      init.method = 'POST';
      init.headers['Content-Type'] = 'application/json';
      init.headers['X-CSRF-Token'] = csrf();
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(qs ? `${path}?${qs}` : path, init);
    } catch (e) {
      throw new ApiError(0, 'unreachable', `Tollgate did not answer (${e.message}).`);
    }
    if (res.status === 401) {
      window.location.assign('/console/login');
      throw new ApiError(401, 'unauthenticated', 'Your sign-in has expired; opening the sign-in page.');
    }
    let data = null;
    try { data = await res.json(); } catch (_) { data = null; }
    if (!res.ok) {
      const e = data && data.error;
      throw new ApiError(res.status, (e && e.code) || `http_${res.status}`,
        (e && e.message) || `The request failed with HTTP ${res.status}.`, e);
    }
    if (data === null) throw new ApiError(res.status, 'bad_response', 'Tollgate answered with something other than JSON.');
    return data;
  };

  let mePromise = null;
  T.me = () => (mePromise ||= T.api('/console/api/me'));

  // ---- Page URL state ----------------------------------------------------

  T.urlParams = () => new URLSearchParams(window.location.search);
  T.setUrl = function (params, push) {
    const qs = T.query(params);
    const url = `${window.location.pathname}${qs ? `?${qs}` : ''}`;
    if (url === `${window.location.pathname}${window.location.search}`) return;
    if (push) window.history.pushState(null, '', url);
    else window.history.replaceState(null, '', url);
  };

  // ---- Forms ------------------------------------------------------------

  // A labelled control: <div class="field"><label for>…</label>control</div>
  T.field = function (label, control, hint) {
    if (!control.id) control.id = T.uid('f');
    let hintNode = null;
    if (hint) {
      hintNode = el('p', { class: 'hint', id: `${control.id}-hint` }, hint);
      control.setAttribute('aria-describedby', hintNode.id);
    }
    return el('div', { class: 'field' }, el('label', { for: control.id }, label), control, hintNode);
  };
  T.input = (name, attrs) => el('input', { name, type: 'text', autocomplete: 'off', ...attrs });
  T.select = function (name, options, value) {
    const select = el('select', { name });
    for (const [v, text] of options) select.append(el('option', { value: v }, text));
    if (value !== undefined && value !== null) select.value = value;
    return select;
  };

  // ---- Live refresh -------------------------------------------------------

  // Runs `fn` now and every `ms` while the tab is visible; a hidden tab
  // pauses it, and it runs at once when the tab shows again. now() runs it
  // out of turn (after the current run, if one is under way).
  // Refresh a live page every five seconds: draw what `load` answers,
  // and say in `status` when it was last updated (errors go to `errors`).
  T.live = function (load, draw, errors, status) {
    return T.poll(async () => {
      try {
        draw(await load());
        T.clearError(errors);
        status.textContent = `Live · updated ${T.fmt.time(Date.now() / 1000).slice(11)}`;
      } catch (err) {
        T.showError(errors, err);
        status.textContent = 'Live · the last refresh failed';
      }
    }, 5000);
  };

  T.poll = function (fn, ms) {
    let timer = null;
    let running = false;
    let again = false;
    const schedule = () => {
      clearTimeout(timer);
      timer = document.hidden ? null : setTimeout(tick, ms);
    };
    async function tick() {
      timer = null;
      if (document.hidden) return;
      running = true;
      try { await fn(); } finally { running = false; }
      if (again) { again = false; tick(); } else schedule();
    }
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) { clearTimeout(timer); timer = null; } else if (!running && !timer) tick();
    });
    tick();
    return {
      now() {
        if (running) { again = true; return; }
        clearTimeout(timer);
        tick();
      },
    };
  };

  // ---- Charts -------------------------------------------------------------

  const cssVar = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

  // A uPlot time series chart in a <figure>: the canvas is one image with
  // an aria-label, the legend is drawn here (uPlot's own is off), and a
  // visually hidden table carries the same numbers for screen readers.
  // series: [{label, key}] — key picks the colour (--chart-<key>).
  T.chart = function (host, { label, series, bars, height = 220 }) {
    const canvas = el('div', { class: 'chart-canvas', role: 'img', 'aria-label': label });
    const legend = el('ul', { class: 'chart-legend', 'aria-hidden': 'true' },
      series.map((s) => el('li', {}, el('span', { class: `swatch swatch-${s.key}` }), s.label)));
    const dataTable = el('div', { class: 'visually-hidden' });
    const figure = el('figure', { class: 'chart' }, canvas, legend, dataTable);
    host.append(figure);

    let plot = null;
    let step = 0;
    const padRange = (u) => [u.data[0][0] - step / 2, u.data[0][u.data[0].length - 1] + step / 2];
    const width = () => Math.max(240, canvas.clientWidth || figure.clientWidth || 600);

    function options() {
      const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid'), width: 1 }, ticks: { stroke: cssVar('--grid'), width: 1 } };
      return {
        width: width(),
        height,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        // Bars are centred on their time: pad the x range by half a step
        // so the first and last are drawn whole.
        scales: bars ? { x: { time: true, range: padRange }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } } : { x: { time: true } },
        axes: [axis, { ...axis, size: 64 }],
        series: [{}, ...series.map((s, i) => {
          const colour = cssVar(`--chart-${s.key}`);
          const line = { label: s.label, stroke: colour, width: 2, points: { show: false } };
          if (!bars) return line;
          // Bars nested inside each other: the first series widest.
          const size = i === 0 ? 0.7 : 0.35;
          return { ...line, width: 0, fill: colour, paths: window.uPlot.paths.bars({ size: [size, 48] }) };
        })],
      };
    }

    if (window.ResizeObserver) {
      new ResizeObserver(() => { if (plot) plot.setSize({ width: width(), height }); }).observe(figure);
    }

    return {
      // x: unix seconds; ys: one array per series.
      set(x, ys) {
        step = x.length > 1 ? x[1] - x[0] : 3600;
        if (!window.uPlot) {
          canvas.textContent = 'The chart library did not load; the numbers are in the tables.';
        } else if (!plot) {
          plot = new window.uPlot(options(), [x, ...ys], canvas);
        } else {
          plot.setData([x, ...ys]);
        }
        dataTable.replaceChildren(T.table({
          caption: `${label}: data`,
          columns: [{ label: 'Time', value: (i) => T.fmt.time(x[i]) },
            ...series.map((s, j) => ({ label: s.label, numeric: true, value: (i) => T.fmt.int(ys[j][i]) }))],
          rows: x.map((_, i) => i),
          empty: 'No data in this range.',
        }));
      },
    };
  };

  // ---- Start --------------------------------------------------------------

  function markNav(page) {
    const current = page === 'call' ? 'audit' : page;
    for (const a of document.querySelectorAll('nav a[data-nav]')) {
      if (a.dataset.nav === current) a.setAttribute('aria-current', 'page');
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    const page = document.body.dataset.page;
    const root = document.getElementById('page');
    markNav(page);
    const render = T.pages[page];
    if (!render) {
      root.append(T.errorBox(new Error(`The console has no page named "${page}".`)));
      return;
    }
    Promise.resolve()
      .then(() => render(root))
      .catch((err) => T.showError(root, err));
  });
}());

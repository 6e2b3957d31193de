// Policies: the Cedar policies in force and each route's mode, how often
// each policy denied a call in the last 24 hours, the latest denials, and a
// form that asks the engine whether a given caller may use a given tool,
// prompt or resource.
'use strict';

(function (T) {
  const { el } = T;
  const MODE_KIND = { enforce: 'ok', observe: 'warn', off: 'plain' };

  function policyArticle(p) {
    const id = T.uid('pol');
    return el('article', { class: 'policy', testid: `policy-${p.id}`, 'aria-labelledby': id, data: { effect: p.effect } },
      el('h3', { id }, el('code', {}, p.id), ' ', T.badge(p.effect, p.effect === 'forbid' ? 'bad' : 'ok')),
      el('pre', { class: 'source' }, p.source || ''));
  }

  function checkForm() {
    const inputs = {
      subject: T.input('subject'),
      team: T.input('team'),
      groups: T.input('groups'),
      server: T.input('server', { required: true }),
      kind: T.select('kind', [['tool', 'Tool'], ['prompt', 'Prompt'], ['resource', 'Resource']], 'tool'),
      name: T.input('name', { required: true }),
    };
    const button = el('button', { type: 'submit', class: 'primary', testid: 'check-submit' }, 'Check');
    const result = el('div', { class: 'check-result', testid: 'check-result', role: 'status' });
    const form = el('form', { testid: 'check-form', 'aria-label': 'Would this be allowed?' },
      el('div', { class: 'grid' },
        T.field('Subject', inputs.subject),
        T.field('Team', inputs.team),
        T.field('Groups', inputs.groups, 'Comma separated'),
        T.field('Server', inputs.server),
        T.field('Kind', inputs.kind),
        T.field('Name', inputs.name)),
      el('div', { class: 'actions' }, button));

    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const body = {
        subject: inputs.subject.value.trim(),
        team: inputs.team.value.trim(),
        groups: inputs.groups.value.split(',').map((g) => g.trim()).filter(Boolean),
        server: inputs.server.value.trim(),
        kind: inputs.kind.value,
        name: inputs.name.value.trim(),
      };
      button.disabled = true;
      result.replaceChildren();
      try {
        const res = await T.api('/console/api/policies/check', { body });
        const allowed = res.decision === 'allow';
        const policies = res.policies || [];
        result.dataset.decision = res.decision;
        result.replaceChildren(el('div', {},
          el('p', {}, T.badge(allowed ? 'Allowed' : 'Denied', allowed ? 'ok' : 'bad'), ' ',
            policies.length ? ['decided by ', policies.map((p, i) => [i ? ', ' : '', el('code', { data: { policy: p.id } }, p.id)])]
              : allowed ? 'no policy forbids it' : 'no policy permits it'),
          (res.errors || []).length ? el('ul', { class: 'bad-text' }, res.errors.map((x) => el('li', {}, typeof x === 'string' ? x : JSON.stringify(x)))) : null));
      } catch (err) {
        delete result.dataset.decision;
        result.replaceChildren(T.errorBox(err));
      } finally {
        button.disabled = false;
      }
    });
    return el('div', {}, form, result);
  }

  T.pages.policies = async function (root) {
    const check = T.section('Would this be allowed?', { testid: 'check' }, checkForm());
    root.append(check);
    const data = await T.api('/console/api/policies');

    const routes = T.table({
      caption: 'Routes and their policy mode',
      testid: 'policy-routes',
      rows: data.routes || [],
      empty: 'No routes.',
      columns: [
        { label: 'Server', value: (r) => T.value(r.server) },
        { label: 'Mode', value: (r) => T.badge(r.mode, MODE_KIND[r.mode]) },
      ],
    });
    const denials = T.table({
      caption: 'Denials per policy, last 24 hours',
      testid: 'policy-denials',
      rows: data.denials || [],
      empty: 'No call was denied in the last 24 hours.',
      columns: [
        { label: 'Policy', value: (d) => el('code', {}, d.policy) },
        T.intColumn('Denials', 'count'),
      ],
    });
    const recent = T.table({
      caption: 'Latest denials',
      testid: 'policy-recent',
      rows: data.recent || [],
      empty: 'No recent denials.',
      columns: [
        {
          label: 'Time',
          value: (r) => el('a', { href: `/console/audit/call?${T.query({ file: r.ref.file, line: r.ref.line })}`, testid: 'call-link' }, T.time(r.time)),
        },
        { label: 'Subject', value: (r) => T.value(r.subject) },
        { label: 'Server', value: (r) => T.value(r.server) },
        { label: 'Name', value: (r) => T.value(r.name) },
        { label: 'Policies', value: (r) => T.value(r.policies) },
        { label: 'Reason', value: (r) => T.value(r.reason) },
      ],
    });
    const policies = data.policies || [];
    root.prepend(
      T.section('Routes', {}, routes),
      T.section('Denials', {}, denials, recent),
      T.section(`Policies (${policies.length})`, { testid: 'policy-list' },
        policies.length ? policies.map(policyArticle) : el('p', { class: 'muted' }, 'No policies are loaded.')));
  };
}(window.Tollgate));

// Access: the grants users gave MCP clients through Tollgate's
// authorization server and their own grants at upstream servers (the
// vault) — each user sees and revokes their own, an admin everyone's —
// and, for admins, the clients it knows, to disable, enable or delete.
'use strict';

(function (T) {
  const { el } = T;

  T.pages.access = function (root) {
    const status = el('p', { class: 'muted', 'aria-live': 'polite' });
    const errors = el('div');
    const body = el('div');
    root.append(status, errors, body);

    async function act(path, payload, button, done) {
      button.disabled = true;
      try {
        await T.api(path, { body: payload });
        status.textContent = done;
        T.clearError(errors);
        await load();
      } catch (err) {
        button.disabled = false;
        T.showError(errors, err);
      }
    }

    function button(label, testid, onClick) {
      return el('button', { type: 'button', testid, on: { click: (ev) => onClick(ev.currentTarget) } }, label);
    }

    function grantsTable(grants, allUsers) {
      const columns = [
        { label: 'Client', value: (g) => el('code', {}, g.client_id) },
        { label: 'Servers', value: (g) => (g.resources || []).map((r) => el('div', {}, el('code', {}, r))) },
        { label: 'Scopes', value: (g) => T.value((g.scopes || []).join(' ')) },
        { label: 'Granted', value: (g) => T.time(g.created) },
        { label: 'How', value: (g) => T.value(g.via) },
        {
          label: 'Action',
          value: (g) => button('Revoke', `revoke-${g.id}`, (b) => act('/console/api/access/revoke', { grant: g.id }, b,
            `Revoked the grant to ${g.client_id}: its tokens stop working now.`)),
        },
      ];
      if (allUsers) columns.unshift({ label: 'User', value: (g) => T.value(g.user && g.user.subject) });
      return T.table({
        caption: allUsers ? 'Every user\'s grants' : 'Clients you allowed to act for you',
        testid: 'grants-table',
        rows: grants,
        empty: 'No grants: no MCP client holds a token from Tollgate for you.',
        rowAttrs: (g) => ({ data: { grant: g.id } }),
        columns,
      });
    }

    function connectionsTable(connections, allUsers) {
      const columns = [
        { label: 'Server', value: (c) => el('code', {}, c.server) },
        { label: 'Upstream', value: (c) => T.value(c.upstream_issuer) },
        { label: 'Scopes', value: (c) => T.value((c.scopes || []).join(' ')) },
        { label: 'Connected', value: (c) => T.time(c.created) },
        {
          label: 'Action',
          value: (c) => button('Disconnect', `disconnect-${c.id}`, (b) => act('/console/api/access/revoke', { grant: c.id }, b,
            `Disconnected ${c.server}: the next call asks to connect again.`)),
        },
      ];
      if (allUsers) columns.unshift({ label: 'User', value: (c) => T.value(c.subject) });
      return T.table({
        caption: allUsers ? 'Every user\'s own grants at upstream servers' : 'Upstream servers Tollgate calls with your own grant',
        testid: 'connections-table',
        rows: connections,
        empty: 'No connections: no upstream holds a grant of yours through Tollgate.',
        rowAttrs: (c) => ({ data: { connection: c.id } }),
        columns,
      });
    }

    function clientsTable(clients) {
      const action = (c, name, label) => button(label, `${name}-${c.client_id}`, (b) => act('/console/api/access/client',
        { client_id: c.client_id, action: name }, b, `${label}d ${c.client_id}.`));
      return T.table({
        caption: 'Clients (registered, or known by their metadata document)',
        testid: 'clients-table',
        rows: clients,
        empty: 'No client has registered yet.',
        rowAttrs: (c) => ({ data: { client: c.client_id, disabled: String(!!c.disabled) } }),
        columns: [
          { label: 'Name', value: (c) => T.value(c.client_name) },
          { label: 'Client id', value: (c) => el('code', {}, c.client_id) },
          { label: 'Kind', value: (c) => T.value(c.kind === 'metadata_document' ? 'metadata document' : 'registered') },
          { label: 'Redirect URIs', value: (c) => (c.redirect_uris || []).map((u) => el('div', {}, el('code', {}, u))) },
          { label: 'Status', value: (c) => (c.disabled ? T.badge('disabled', 'bad') : T.badge('active', 'ok')) },
          { label: 'First seen', value: (c) => T.time(c.created) },
          {
            label: 'Action',
            value: (c) => [c.disabled ? action(c, 'enable', 'Enable') : action(c, 'disable', 'Disable'), ' ',
              action(c, 'delete', 'Delete')],
          },
        ],
      });
    }

    async function load() {
      const data = await T.api('/console/api/access');
      if (!data.enabled) {
        body.replaceChildren(el('p', { class: 'muted' },
          'Tollgate is not the authorization server of its routes here ([authorization_server] is off).'));
        return;
      }
      const parts = [
        T.section('Grants', { testid: 'grants' }, grantsTable(data.grants || [], data.all_users)),
        T.section('Connections', { testid: 'connections' }, connectionsTable(data.connections || [], data.all_users)),
      ];
      if (data.clients) parts.push(T.section('Clients', { testid: 'clients' }, clientsTable(data.clients)));
      body.replaceChildren(...parts);
    }

    load().catch((err) => T.showError(errors, err));
  };
}(window.Tollgate));

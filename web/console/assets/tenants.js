// Tenants, for platform admins: the list, creating one, suspending and reactivating, and
// choosing the tenant the console acts in.
import { call, session } from './api.js';
import { switchTenant } from './app.js';
import { badge, confirm, errorText, failure, field, go, h, list, notice, page, when } from './ui.js';

export async function tenantsPage() {
  const section = h('section', { 'aria-labelledby': 'tenants-title', id: 'tenants' }, h('h2', { id: 'tenants-title' }, 'All tenants'));
  page('Tenants', section, createForm());
  let data;
  try {
    ({ data } = await call('GET', '/v1/tenants'));
  } catch (err) {
    section.append(err.status === 403 ? h('p', {}, 'Only platform admins manage tenants.') : failure(err, 'The tenants could not be read: '));
    return;
  }
  const rows = data.items.map((t) => h('tr', { 'data-tenant': t.id },
    h('td', {}, h('code', {}, t.id)), h('td', {}, t.name), h('td', {}, badge(t.status)), h('td', {}, when(t.createdAt)),
    h('td', { class: 'buttons' },
      h('button', {
        type: 'button', class: t.id === session.tenant ? 'secondary' : '', disabled: t.status !== 'active' || t.id === session.tenant,
        'aria-label': `Act in ${t.id}`,
        onclick: async () => { await switchTenant(t.id); go('#/cards'); },
      }, t.id === session.tenant ? 'Acting here' : 'Act here'),
      t.status === 'active'
        ? h('button', { type: 'button', class: 'danger', 'aria-label': `Suspend ${t.id}`, onclick: () => setStatus(t, 'suspended') }, 'Suspend')
        : h('button', { type: 'button', 'aria-label': `Reactivate ${t.id}`, onclick: () => setStatus(t, 'active') }, 'Reactivate'))));
  section.append(h('table', { id: 'tenants-table' },
    h('caption', {}, `${data.total} ${data.total === 1 ? 'tenant' : 'tenants'}`),
    h('thead', {}, h('tr', {}, ...['Id', 'Name', 'Status', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows)));
}

async function setStatus(t, status) {
  if (status === 'suspended' && !(await confirm(`Suspend ${t.id}? Its members, agents and public cards are refused until it is reactivated.`, 'Suspend'))) {
    return;
  }
  try {
    await call('PATCH', `/v1/tenants/${encodeURIComponent(t.id)}`, { body: { status }, contentType: 'application/merge-patch+json' });
    notice(`${t.id} is ${status} now.`, 'ok');
  } catch (err) {
    notice(`${t.id} was not changed: ${errorText(err)}`, 'error');
  }
  await tenantsPage();
}

function createForm() {
  const inputs = {
    id: h('input', { name: 'id', id: 'tenant-id', required: true, autocomplete: 'off', pattern: '[a-z0-9][a-z0-9-]{0,62}' }),
    name: h('input', { name: 'name', id: 'tenant-name', required: true, autocomplete: 'off' }),
    admins: h('input', { name: 'admins', id: 'tenant-admins', autocomplete: 'off' }),
  };
  const status = h('p', { id: 'tenant-status', role: 'alert', hidden: true, class: 'error' });
  const form = h('form', { class: 'inline', novalidate: true },
    field('Id', inputs.id, 'Lowercase letters, digits and -, as in the URLs.'),
    field('Name', inputs.name),
    field('Admins', inputs.admins, 'Comma-separated subjects given the admin role.'),
    h('button', { type: 'submit' }, 'Create'), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await call('POST', '/v1/tenants', { body: { id: inputs.id.value.trim(), name: inputs.name.value.trim(), admins: list(inputs.admins.value) } });
      notice(`Created ${inputs.id.value.trim()}.`, 'ok');
      await tenantsPage();
    } catch (err) {
      status.hidden = false;
      status.textContent = `Not created: ${errorText(err)}`;
    }
  });
  return h('section', { 'aria-labelledby': 'create-title' }, h('h2', { id: 'create-title' }, 'Create a tenant'), form);
}

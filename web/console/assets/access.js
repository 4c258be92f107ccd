// Access: the tenant's roles and policies, granting and revoking, and a box that asks the
// authorize request whether someone may do something.
import { call, tenantPath } from './api.js';
import { confirm, errorText, failure, field, h, notice, page } from './ui.js';

const ACTIONS = ['cards:read', 'cards:write', 'cards:delete', 'cards:heartbeat', 'delegate', 'delegations:read', 'policies:manage', 'audit:read', 'search:manage'];
const ROLES = ['reader', 'editor', 'orchestrator', 'admin'];

function datalist(id, values) {
  return h('datalist', { id }, ...values.map((v) => h('option', { value: v })));
}

export async function accessPage() {
  const check = checkBox();
  const roles = h('section', { 'aria-labelledby': 'roles-title', id: 'roles' }, h('h2', { id: 'roles-title' }, 'Roles'));
  const policies = h('section', { 'aria-labelledby': 'policies-title', id: 'policies' }, h('h2', { id: 'policies-title' }, 'Policies'));
  page('Access', datalist('actions', ACTIONS), datalist('roles-list', ROLES), check, roles, policies);
  await Promise.all([renderRoles(roles), renderPolicies(policies)]);
}

// checkBox is "may X do Y on Z?" over POST /authorize.
function checkBox() {
  const subject = h('input', { name: 'subject', id: 'check-subject', autocomplete: 'off' });
  const action = h('input', { name: 'action', id: 'check-action', list: 'actions', required: true, autocomplete: 'off' });
  const object = h('input', { name: 'object', id: 'check-object', required: true, autocomplete: 'off' });
  const answer = h('p', { id: 'check-answer', 'aria-live': 'polite' });
  const form = h('form', { class: 'inline', novalidate: true },
    field('Subject', subject, 'A user, agent:{agentId} or a role; empty: you.'),
    field('Action', action),
    field('Object', object, 'policies, audit, search, cards/{agentId}, cards/{agentId}/capabilities/{name} or delegations/{id}.'),
    h('button', { type: 'submit' }, 'Ask'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    answer.className = '';
    try {
      const { data } = await call('POST', tenantPath('/authorize'), {
        body: { subject: subject.value.trim() || undefined, action: action.value.trim(), object: object.value.trim() },
      });
      answer.className = data.allowed ? 'allowed' : 'refused';
      answer.textContent = `${data.allowed ? 'Allowed' : 'Refused'}: ${data.reason}`;
    } catch (err) {
      answer.className = 'error';
      answer.textContent = `No answer: ${errorText(err)}`;
    }
  });
  return h('section', { 'aria-labelledby': 'check-title', id: 'check' }, h('h2', { id: 'check-title' }, 'May someone do something?'), form, answer);
}

function table(caption, headers, rows) {
  return h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows));
}

async function renderRoles(section) {
  let data;
  try {
    ({ data } = await call('GET', tenantPath('/roles')));
  } catch (err) {
    section.append(err.status === 403
      ? h('p', { id: 'roles-refused' }, 'Roles and policies are managed by holders of policies:manage (the admin role).')
      : failure(err, 'The roles could not be read: '));
    return;
  }
  const rows = data.items.map((a) => h('tr', { 'data-subject': a.subject, 'data-role': a.role },
    h('td', {}, a.subject), h('td', {}, a.role),
    h('td', {}, h('button', {
      type: 'button', class: 'danger small', 'aria-label': `Revoke ${a.role} from ${a.subject}`,
      onclick: async () => {
        if (!(await confirm(`Take the role ${a.role} from ${a.subject}?`, 'Revoke'))) { return; }
        try {
          await call('DELETE', tenantPath('/roles'), { query: { subject: a.subject, role: a.role } });
          notice(`Revoked ${a.role} from ${a.subject}.`, 'ok');
          await accessPage();
        } catch (err) {
          notice(`Not revoked: ${errorText(err)}`, 'error');
        }
      },
    }, 'Revoke'))));
  const subject = h('input', { name: 'subject', id: 'grant-subject', required: true, autocomplete: 'off' });
  const role = h('input', { name: 'role', id: 'grant-role', list: 'roles-list', required: true, autocomplete: 'off' });
  const status = h('p', { id: 'grant-status', role: 'alert', hidden: true, class: 'error' });
  const form = h('form', { class: 'inline', novalidate: true, 'aria-label': 'Grant a role' },
    field('Subject', subject, 'A user, or agent:{agentId}.'), field('Role', role), h('button', { type: 'submit' }, 'Grant'), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await call('POST', tenantPath('/roles'), { body: { subject: subject.value.trim(), role: role.value.trim() } });
      notice(`Granted ${role.value.trim()} to ${subject.value.trim()}.`, 'ok');
      await accessPage();
    } catch (err) {
      status.hidden = false;
      status.textContent = `Not granted: ${errorText(err)}`;
    }
  });
  section.append(table(`${data.total} role ${data.total === 1 ? 'assignment' : 'assignments'}`, ['Subject', 'Role', ''], rows),
    h('h3', {}, 'Grant a role'), form);
}

async function renderPolicies(section) {
  let data;
  try {
    ({ data } = await call('GET', tenantPath('/policies')));
  } catch (err) {
    if (err.status !== 403) { section.append(failure(err, 'The policies could not be read: ')); } else { section.remove(); }
    return;
  }
  const rows = data.items.map((p) => h('tr', {},
    h('td', {}, p.subject), h('td', {}, p.object), h('td', {}, p.action), h('td', {}, p.effect),
    h('td', {}, h('button', {
      type: 'button', class: 'danger small', 'aria-label': `Remove ${p.effect} ${p.action} on ${p.object} for ${p.subject}`,
      onclick: async () => {
        const builtIn = ROLES.includes(p.subject)
          ? ` This is a policy of the built-in role ${p.subject}: every member of the role loses it${p.action === 'policies:manage' ? ', and without it nobody but a platform admin can manage roles and policies here' : ''}.`
          : '';
        if (!(await confirm(`Remove the policy: ${p.effect} ${p.subject} ${p.action} on ${p.object}?${builtIn}`, 'Remove'))) { return; }
        try {
          await call('DELETE', tenantPath('/policies'), { query: p });
          notice('Policy removed.', 'ok');
          await accessPage();
        } catch (err) {
          notice(`Not removed: ${errorText(err)}`, 'error');
        }
      },
    }, 'Remove'))));
  const inputs = {
    subject: h('input', { name: 'subject', id: 'policy-subject', required: true, autocomplete: 'off' }),
    object: h('input', { name: 'object', id: 'policy-object', required: true, autocomplete: 'off' }),
    action: h('input', { name: 'action', id: 'policy-action', list: 'actions', required: true, autocomplete: 'off' }),
    effect: h('select', { name: 'effect', id: 'policy-effect' }, h('option', { value: 'allow' }, 'allow'), h('option', { value: 'deny' }, 'deny')),
  };
  const status = h('p', { id: 'policy-status', role: 'alert', hidden: true, class: 'error' });
  const form = h('form', { class: 'inline', novalidate: true, 'aria-label': 'Add a policy' },
    field('Subject', inputs.subject, 'A user, agent:{agentId} or a role.'), field('Object', inputs.object), field('Action', inputs.action),
    field('Effect', inputs.effect), h('button', { type: 'submit' }, 'Add'), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = Object.fromEntries(Object.entries(inputs).map(([k, c]) => [k, c.value.trim()]));
    try {
      await call('POST', tenantPath('/policies'), { body });
      notice('Policy added.', 'ok');
      await accessPage();
    } catch (err) {
      status.hidden = false;
      status.textContent = `Not added: ${errorText(err)}`;
    }
  });
  section.append(table(`${data.total} ${data.total === 1 ? 'policy' : 'policies'}, the built-in roles' included`, ['Subject', 'Object', 'Action', 'Effect', ''], rows),
    h('h3', {}, 'Add a policy'), form);
}

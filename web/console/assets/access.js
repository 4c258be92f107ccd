// Access: the tenant's roles and policies, granting and revoking, and a box that asks the
// authorize request whether someone may do something. Roles, actions, subjects and objects are
// offered from what the API lists (free text stays possible), and a change that would leave no
// one to manage the tenant's roles and policies is said so before it is sent.
import { call, caps, tenantPath } from './api.js';
import { confirm, errorText, failure, field, h, notice, page } from './ui.js';

// The actions and built-in roles every tenant has; the tenant's own rules add theirs.
const ACTIONS = ['cards:read', 'cards:write', 'cards:delete', 'cards:heartbeat', 'delegate', 'delegations:read', 'policies:manage', 'audit:read', 'search:manage', 'webhooks:manage', 'trust:manage', 'sources:manage'];
const ROLES = ['reader', 'editor', 'orchestrator', 'admin'];
// OBJECTS are the object patterns offered besides those the tenant's policies name.
const OBJECTS = ['policies', 'audit', 'search', 'cards/*', 'cards/*/capabilities/*', 'delegations/*'];

function datalist(id, values) {
  return h('datalist', { id }, ...values.map((v) => h('option', { value: v })));
}

// offer adds the values a datalist does not have yet.
function offer(id, values) {
  const list = document.getElementById(id);
  if (!list) { return; }
  const have = new Set([...list.options].map((o) => o.value));
  for (const v of values) {
    if (v && !have.has(v)) { have.add(v); list.append(h('option', { value: v })); }
  }
}

export async function accessPage() {
  const check = checkBox();
  const roles = h('section', { 'aria-labelledby': 'roles-title', id: 'roles' }, h('h2', { id: 'roles-title' }, 'Roles'));
  const policies = h('section', { 'aria-labelledby': 'policies-title', id: 'policies' }, h('h2', { id: 'policies-title' }, 'Policies'));
  page('Access', datalist('actions', ACTIONS), datalist('roles-list', ROLES), datalist('subjects-list', []), datalist('objects-list', OBJECTS),
    check, roles, policies);
  const [r, p] = await Promise.allSettled([call('GET', tenantPath('/roles')), call('GET', tenantPath('/policies'))]);
  const rules = {
    assignments: r.status === 'fulfilled' ? r.value.data.items : [],
    policies: p.status === 'fulfilled' ? p.value.data.items : [],
  };
  offer('roles-list', rules.assignments.map((a) => a.role));
  offer('actions', rules.policies.map((x) => x.action));
  offer('objects-list', rules.policies.map((x) => x.object));
  offer('subjects-list', [...rules.assignments.map((a) => a.subject), ...rules.policies.map((x) => x.subject)]);
  renderRoles(roles, r, rules);
  renderPolicies(policies, p, rules);
}

// managers are the users the rules let manage the tenant's roles and policies, as the server's
// lockout check counts them (docs/auth.md, "No lockout"): a user allowed policies:manage on
// policies by a policy naming them or one of their roles, and denied it by none. A policy's
// subject that names a built-in role is the role; an agent (agent:...) manages nothing.
export function managers({ assignments, policies }) {
  const rolesOf = new Map();
  for (const a of assignments) { rolesOf.set(a.subject, [...(rolesOf.get(a.subject) || []), a.role]); }
  const manage = policies.filter((p) => p.action === 'policies:manage' && p.object === 'policies');
  const allow = new Set(manage.filter((p) => p.effect === 'allow').map((p) => p.subject));
  const deny = new Set(manage.filter((p) => p.effect === 'deny').map((p) => p.subject));
  const users = new Set([...assignments.map((a) => a.subject), ...manage.filter((p) => !ROLES.includes(p.subject)).map((p) => p.subject)]);
  return [...users].filter((u) => {
    if (u.startsWith('agent:')) { return false; }
    const as = [u, ...(rolesOf.get(u) || []).filter((role) => ROLES.includes(role))];
    // A user's own name in a policy is the user; a role's name is the role (never the user).
    const holds = (set) => as.some((s, i) => set.has(s) && (i > 0 || !ROLES.includes(s)));
    return holds(allow) && !holds(deny);
  });
}

// lockout is what a change would do, said as the server says it, or '' when it leaves someone to
// manage the tenant (or no one could before: the console then has nothing to warn of).
function lockout(rules, changed, what, remedy) {
  if (!managers(rules).length || managers(changed).length) { return ''; }
  const who = caps.platform
    ? ' As a platform admin you may make it anyway; then only a platform admin can manage this tenant.'
    : ' The server refuses it (409 lockout).';
  return `${what} would leave no one who may manage the tenant's roles and policies (policies:manage on policies): ${remedy}; a platform admin may still make the change.${who}`;
}

const same = (x) => (y) => Object.keys(x).every((k) => x[k] === y[k]);

// checkBox is "may X do Y on Z?" over POST /authorize.
function checkBox() {
  const subject = h('input', { name: 'subject', id: 'check-subject', list: 'subjects-list', autocomplete: 'off' });
  const action = h('input', { name: 'action', id: 'check-action', list: 'actions', required: true, autocomplete: 'off' });
  const object = h('input', { name: 'object', id: 'check-object', list: 'objects-list', required: true, autocomplete: 'off' });
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

function renderRoles(section, answer, rules) {
  if (answer.status === 'rejected') {
    const err = answer.reason;
    section.append(err.status === 403
      ? h('p', { id: 'roles-refused' }, 'Roles and policies are managed by holders of policies:manage (the admin role).')
      : failure(err, 'The roles could not be read: '));
    return;
  }
  const { data } = answer.value;
  const rows = data.items.map((a) => h('tr', { 'data-subject': a.subject, 'data-role': a.role },
    h('td', {}, a.subject), h('td', {}, a.role),
    h('td', {}, h('button', {
      type: 'button', class: 'danger small', 'aria-label': `Revoke ${a.role} from ${a.subject}`,
      onclick: async () => {
        const warning = lockout(rules, { ...rules, assignments: rules.assignments.filter((x) => !same(a)(x)) },
          `Revoking the role ${a.role} of ${a.subject}`, 'give another subject the admin role first');
        if (!(await confirm(`Take the role ${a.role} from ${a.subject}?${warning ? ` ${warning}` : ''}`, 'Revoke'))) { return; }
        try {
          await call('DELETE', tenantPath('/roles'), { query: { subject: a.subject, role: a.role } });
          notice(`Revoked ${a.role} from ${a.subject}.`, 'ok');
          await accessPage();
        } catch (err) {
          notice(`Not revoked: ${errorText(err)}`, 'error');
        }
      },
    }, 'Revoke'))));
  const subject = h('input', { name: 'subject', id: 'grant-subject', list: 'subjects-list', required: true, autocomplete: 'off' });
  const role = h('input', { name: 'role', id: 'grant-role', list: 'roles-list', required: true, autocomplete: 'off' });
  const status = h('p', { id: 'grant-status', role: 'alert', hidden: true, class: 'error' });
  const form = h('form', { class: 'inline', novalidate: true, 'aria-label': 'Grant a role' },
    field('Subject', subject, 'A user, or agent:{agentId}.'), field('Role', role), h('button', { type: 'submit' }, 'Grant'), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const a = { subject: subject.value.trim(), role: role.value.trim() };
    const warning = lockout(rules, { ...rules, assignments: [...rules.assignments, a] },
      `Giving ${a.subject} the role ${a.role}`, 'a deny policy of the role takes that right away; remove the deny first');
    if (warning && !(await confirm(warning, 'Grant'))) { return; }
    try {
      await call('POST', tenantPath('/roles'), { body: a });
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

function renderPolicies(section, answer, rules) {
  if (answer.status === 'rejected') {
    if (answer.reason.status !== 403) { section.append(failure(answer.reason, 'The policies could not be read: ')); } else { section.remove(); }
    return;
  }
  const { data } = answer.value;
  const rows = data.items.map((p) => h('tr', {},
    h('td', {}, p.subject), h('td', {}, p.object), h('td', {}, p.action), h('td', {}, p.effect),
    h('td', {}, h('button', {
      type: 'button', class: 'danger small', 'aria-label': `Remove ${p.effect} ${p.action} on ${p.object} for ${p.subject}`,
      onclick: async () => {
        const builtIn = ROLES.includes(p.subject)
          ? ` This is a policy of the built-in role ${p.subject}: every member of the role loses it.`
          : '';
        const warning = lockout(rules, { ...rules, policies: rules.policies.filter((x) => !same(p)(x)) },
          'Removing this policy', 'first allow policies:manage on policies to a subject by another policy or role');
        if (!(await confirm(`Remove the policy: ${p.effect} ${p.subject} ${p.action} on ${p.object}?${builtIn}${warning ? ` ${warning}` : ''}`, 'Remove'))) { return; }
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
    subject: h('input', { name: 'subject', id: 'policy-subject', list: 'subjects-list', required: true, autocomplete: 'off' }),
    object: h('input', { name: 'object', id: 'policy-object', list: 'objects-list', required: true, autocomplete: 'off' }),
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
    const warning = lockout(rules, { ...rules, policies: [...rules.policies, body] },
      'This deny policy', 'deny a narrower subject, or first give that right to a subject the deny does not cover');
    if (warning && !(await confirm(warning, 'Add'))) { return; }
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

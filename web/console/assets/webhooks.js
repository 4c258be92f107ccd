// Webhooks: the tenant's subscriptions to its card changes, with their delivery state and last
// deliveries; created, paused, resumed and removed by holders of webhooks:manage (the admin role).
import { call, tenantPath } from './api.js';
import { badge, confirm, errorText, failure, field, h, lines, notice, page, ticket, when } from './ui.js';

const TYPES = ['agentcards.card.upserted', 'agentcards.card.removed'];

function hookPath(id, rest = '') {
  return tenantPath(`/webhooks/${encodeURIComponent(id)}${rest}`);
}

export async function webhooksPage() {
  const live = ticket();
  const section = h('section', { 'aria-labelledby': 'webhooks-title', id: 'webhooks' }, h('h2', { id: 'webhooks-title' }, 'Webhooks'));
  page('Webhooks',
    h('p', { class: 'hint' }, 'Each change of a card the filter matches is POSTed to the URL as a signed CloudEvent, in order, retried until it is answered 2xx.'),
    section);
  let data;
  try {
    ({ data } = await call('GET', tenantPath('/webhooks')));
  } catch (err) {
    if (!live()) { return; }
    section.append(err.status === 403
      ? h('p', { id: 'webhooks-refused' }, 'Webhooks are managed by holders of webhooks:manage (the admin role).')
      : failure(err, 'The webhooks could not be read: '));
    return;
  }
  if (!live()) { return; }
  const rows = data.items.map((w) => h('tr', { 'data-id': w.id },
    h('td', {}, h('code', {}, w.url)),
    h('td', {}, filterText(w)),
    h('td', {}, badge(w.state), w.state === 'failing' ? ` ${w.failures} in a row since ${when(w.failingSince)}` : ''),
    h('td', { class: 'last-error' }, w.lastError || ''),
    h('td', {}, w.state === 'disabled' ? '' : when(w.nextAttemptAt)),
    h('td', { class: 'buttons' },
      h('button', { type: 'button', class: 'small', 'aria-label': `Deliveries of ${w.id}`, onclick: () => showDeliveries(w, section) }, 'Deliveries'),
      w.state === 'disabled'
        ? h('button', { type: 'button', class: 'small', 'aria-label': `Resume ${w.id}`, onclick: () => setState(w, 'active') }, 'Resume')
        : h('button', { type: 'button', class: 'small', 'aria-label': `Pause ${w.id}`, onclick: () => setState(w, 'disabled') }, 'Pause'),
      h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove ${w.id}`, onclick: () => remove(w) }, 'Remove'))));
  section.append(h('table', { id: 'webhooks-table' },
    h('caption', {}, `${data.total} ${data.total === 1 ? 'webhook' : 'webhooks'}`),
    h('thead', {}, h('tr', {}, ...['URL', 'Filter', 'State', 'Last error', 'Next attempt', ''].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows)),
  h('div', { id: 'deliveries' }),
  h('h3', { id: 'webhook-form-title' }, 'Add a webhook'), createForm());
}

function filterText(w) {
  const types = w.types.length ? w.types.map((t) => t.replace('agentcards.card.', '')).join(', ') : 'every change';
  const agents = w.agentIds.length ? ` of ${w.agentIds.join(', ')}` : '';
  return types + agents;
}

// showDeliveries lists the subscription's last deliveries under the table.
async function showDeliveries(w, section) {
  const box = section.querySelector('#deliveries');
  box.replaceChildren(h('p', {}, 'Reading the deliveries…'));
  try {
    const { data } = await call('GET', hookPath(w.id, '/deliveries'), { query: { limit: 20 } });
    box.replaceChildren(h('table', { id: 'deliveries-table' },
      h('caption', {}, `The last ${data.total} ${data.total === 1 ? 'delivery' : 'deliveries'} to ${w.url}`),
      h('thead', {}, h('tr', {}, ...['At', 'Event', 'Agent', 'Outcome', 'Latency'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...data.items.map((d) => h('tr', { 'data-event': d.eventId },
        h('td', {}, when(d.at)), h('td', {}, `${d.type.replace('agentcards.card.', '')} #${d.eventId}`), h('td', {}, d.agentId),
        h('td', {}, d.ok ? badge('ok', 'active') : badge(d.error || `answered ${d.status}`, 'disabled')),
        h('td', {}, `${d.latencyMs} ms`))))));
  } catch (err) {
    box.replaceChildren(failure(err, 'The deliveries could not be read: '));
  }
}

async function setState(w, state) {
  try {
    await call('PATCH', hookPath(w.id), { body: { state } });
    notice(state === 'active' ? `Resumed the webhook to ${w.url}.` : `Paused the webhook to ${w.url}.`, 'ok');
    await webhooksPage();
  } catch (err) {
    notice(`Not changed: ${errorText(err)}`, 'error');
  }
}

async function remove(w) {
  if (!(await confirm(`Remove the webhook to ${w.url}? Its delivery records go with it.`, 'Remove'))) { return; }
  try {
    await call('DELETE', hookPath(w.id));
    notice(`Removed the webhook to ${w.url}.`, 'ok');
    await webhooksPage();
  } catch (err) {
    notice(`Not removed: ${errorText(err)}`, 'error');
  }
}

// createForm subscribes a URL, with the types checked (none: every type) and the agent globs.
function createForm() {
  const url = h('input', { name: 'url', id: 'webhook-url', type: 'url', required: true, autocomplete: 'off', spellcheck: 'false', maxlength: 2048 });
  const boxes = TYPES.map((t) => h('input', { type: 'checkbox', name: 'types', value: t, id: `webhook-type-${t.replace('agentcards.card.', '')}` }));
  const agents = h('textarea', { name: 'agentIds', id: 'webhook-agents', rows: 3, autocomplete: 'off', spellcheck: 'false' });
  const status = h('p', { id: 'webhook-status', role: 'alert', hidden: true, class: 'error' });
  const el = h('form', { novalidate: true, 'aria-labelledby': 'webhook-form-title' },
    field('URL', url, 'http or https; it receives a POST for each change.'),
    h('fieldset', {}, h('legend', {}, 'Changes (none checked: all)'),
      ...boxes.map((b) => h('label', { for: b.id }, b, ` ${b.value}`))),
    field('Agents', agents, 'Globs of agent ids, one a line (billing-*); none: every agent.'),
    h('button', { type: 'submit', id: 'webhook-save' }, 'Add'), status);
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.hidden = true;
    const body = { url: url.value.trim(), types: boxes.filter((b) => b.checked).map((b) => b.value), agentIds: lines(agents.value) };
    try {
      await call('POST', tenantPath('/webhooks'), { body });
      notice(`Added the webhook to ${body.url}.`, 'ok');
      await webhooksPage();
    } catch (err) {
      status.hidden = false;
      status.textContent = `Not added: ${errorText(err)}`;
    }
  });
  return el;
}

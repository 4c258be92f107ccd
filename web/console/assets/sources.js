// Sources: the registries the tenant follows, each with the state of its sync, and the cards it
// mirrors read-only; followed and stopped by holders of sources:manage (the admin role).
import { call, tenantPath } from './api.js';
import { badge, confirm, errorText, failure, field, h, lines, notice, page, ticket, when } from './ui.js';

const KINDS = {
  agentcards: 'Another agentcards tenant',
  'ai-catalog': 'An AI Catalog',
  'a2a-urls': 'A2A card URLs',
};

function sourcePath(id) {
  return tenantPath(`/sources/${encodeURIComponent(id)}`);
}

// whereText is where a source is: its URL, or its card URLs.
function whereText(s) {
  if (s.url) { return h('code', {}, s.url); }
  const urls = s.urls || [];
  return urls.length === 1 ? h('code', {}, urls[0]) : `${urls.length} card URLs`;
}

// stateText is a source's state, with its failures and what the last said.
function stateText(s) {
  const out = [badge(s.state, s.state === 'failing' ? 'disabled' : s.state === 'active' ? 'active' : 'deprecated')];
  if (s.state === 'failing') { out.push(` ${s.failures} in a row`); }
  return out;
}

export async function sourcesPage() {
  const live = ticket();
  const section = h('section', { 'aria-labelledby': 'sources-title', id: 'sources' }, h('h2', { id: 'sources-title' }, 'Sources'));
  page('Sources',
    h('p', { class: 'hint' }, 'The tenant mirrors the cards of each source, read-only: another agentcards tenant followed live, an AI Catalog or A2A card URLs read every interval. A card of the tenant\'s own is never overwritten.'),
    section);
  let data;
  try {
    ({ data } = await call('GET', tenantPath('/sources')));
  } catch (err) {
    if (!live()) { return; }
    section.append(err.status === 403
      ? h('p', { id: 'sources-refused' }, 'Sources are managed by holders of sources:manage (the admin role).')
      : failure(err, 'The sources could not be read: '));
    return;
  }
  if (!live()) { return; }
  const rows = data.items.map((s) => h('tr', { 'data-id': s.id },
    h('td', {}, KINDS[s.kind] || s.kind),
    h('td', {}, whereText(s)),
    h('td', { class: 'state' }, stateText(s)),
    h('td', {}, `${s.cards}`, s.conflicts && s.conflicts.length ? h('span', { class: 'conflicts' }, ` (not over the tenant's own: ${s.conflicts.join(', ')})`) : ''),
    h('td', { class: 'last-error' }, s.lastError || ''),
    h('td', {}, s.lastSyncAt ? when(s.lastSyncAt) : ''),
    h('td', { class: 'buttons' },
      s.state !== 'removing' && s.kind === 'agentcards'
        ? h('button', { type: 'button', class: 'small', 'aria-label': `New token for ${s.id}`, onclick: () => tokenForm(s, section) }, 'New token') : '',
      s.state === 'removing' ? '' : h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove ${s.id}`, onclick: () => remove(s) }, 'Remove'))));
  section.append(h('div', { id: 'source-token-edit' }), h('table', { id: 'sources-table' },
    h('caption', {}, `${data.total} ${data.total === 1 ? 'source' : 'sources'}`),
    h('thead', {}, h('tr', {}, ...['Kind', 'Where', 'State', 'Cards', 'Last error', 'Last synced', ''].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows)),
  h('h3', { id: 'source-form-title' }, 'Follow a source'), createForm());
}

// tokenForm asks for a new token for an agentcards source (its old one expired, say), above the
// table; the source uses it from its next sync on, at once if it is failing.
function tokenForm(s, section) {
  const box = section.querySelector('#source-token-edit');
  const token = h('input', { name: 'token', id: 'source-new-token', type: 'password', autocomplete: 'off', spellcheck: 'false' });
  const status = h('p', { id: 'source-token-status', role: 'alert', hidden: true, class: 'error' });
  const form = h('form', { novalidate: true, 'aria-label': `New token for ${s.url}` },
    field(`New token for ${s.url}`, token, 'Sent from the source\'s next sync on; its cards stay meanwhile. Kept sealed; never shown again.'),
    h('button', { type: 'submit', id: 'source-token-save' }, 'Save token'), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.hidden = true;
    try {
      await call('PATCH', sourcePath(s.id), { body: { token: token.value.trim() } });
      notice(`Saved a new token for ${s.url}.`, 'ok');
      await sourcesPage();
    } catch (err) {
      status.hidden = false;
      status.textContent = `Not saved: ${errorText(err)}`;
    }
  });
  box.replaceChildren(form);
  token.focus();
}

async function remove(s) {
  if (!(await confirm(`Stop following ${s.url || `${(s.urls || []).length} card URLs`}? The ${s.cards} cards mirrored from it are removed.`, 'Remove'))) { return; }
  try {
    await call('DELETE', sourcePath(s.id));
    notice('Removing the source: its mirrored cards go, then the source.', 'ok');
    await sourcesPage();
  } catch (err) {
    notice(`Not removed: ${errorText(err)}`, 'error');
  }
}

// createForm follows a source: its kind chooses which fields it takes.
function createForm() {
  const kind = h('select', { name: 'kind', id: 'source-kind' }, ...Object.entries(KINDS).map(([k, text]) => h('option', { value: k }, text)));
  const url = h('input', { name: 'url', id: 'source-url', type: 'url', autocomplete: 'off', spellcheck: 'false', maxlength: 2048 });
  const urls = h('textarea', { name: 'urls', id: 'source-urls', rows: 4, autocomplete: 'off', spellcheck: 'false' });
  const token = h('input', { name: 'token', id: 'source-token', type: 'password', autocomplete: 'off', spellcheck: 'false' });
  const interval = h('input', { name: 'intervalSeconds', id: 'source-interval', type: 'number', min: 10, max: 86400, placeholder: '300' });
  const urlBox = h('div', { id: 'source-url-box' }, field('URL', url, 'agentcards: the tenant\'s URL, https://host/v1/tenants/{id}; AI Catalog: the document\'s URL.'));
  const urlsBox = h('div', { id: 'source-urls-box', hidden: true }, field('Card URLs', urls, 'One A2A card URL a line.'));
  const tokenBox = h('div', { id: 'source-token-box' }, field('Token', token, 'A token that service issued, with cards:read there. Kept sealed; never shown again.'));
  const intervalBox = h('div', { id: 'source-interval-box', hidden: true }, field('Read every (seconds)', interval, 'From 10 to 86400; 300 when empty.'));
  const status = h('p', { id: 'source-status', role: 'alert', hidden: true, class: 'error' });
  const show = () => {
    urlBox.hidden = kind.value === 'a2a-urls';
    urlsBox.hidden = kind.value !== 'a2a-urls';
    tokenBox.hidden = kind.value !== 'agentcards';
    intervalBox.hidden = kind.value === 'agentcards';
  };
  kind.addEventListener('change', show);
  const el = h('form', { novalidate: true, 'aria-labelledby': 'source-form-title' },
    field('Kind', kind), urlBox, urlsBox, tokenBox, intervalBox,
    h('button', { type: 'submit', id: 'source-save' }, 'Follow'), status);
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.hidden = true;
    const body = { kind: kind.value };
    if (kind.value === 'a2a-urls') { body.urls = lines(urls.value); } else { body.url = url.value.trim(); }
    if (kind.value === 'agentcards' && token.value.trim()) { body.token = token.value.trim(); }
    if (kind.value !== 'agentcards' && interval.value.trim()) { body.intervalSeconds = Number(interval.value); }
    try {
      await call('POST', tenantPath('/sources'), { body });
      notice('Following the source: its cards arrive as it syncs.', 'ok');
      await sourcesPage();
    } catch (err) {
      status.hidden = false;
      status.textContent = `Not followed: ${errorText(err)}`;
    }
  });
  return el;
}

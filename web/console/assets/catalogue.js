// The catalogue: the card search with the API's filters, ranked results with the matched
// capabilities marked, cursor paging and the total.
import { call, tenantPath } from './api.js';
import { badge, errorText, field, go, h, hashQuery, list, liveBadge, NEVER_HEARD, page, ticket } from './ui.js';

const STATUSES = ['active', 'deprecated', 'disabled'];

// trail remembers the cursors of the pages before this one, for the last search, for "Previous
// page"; it is kept in the tab's sessionStorage, so a reload keeps it.
const TRAIL = 'agentcards.trail';
let trail = loadTrail();

function loadTrail() {
  try {
    const t = JSON.parse(sessionStorage.getItem(TRAIL) || 'null');
    if (t && typeof t.key === 'string' && Array.isArray(t.cursors)) { return t; }
  } catch { /* a trail that does not read is no trail */ }
  return { key: '', cursors: [] };
}

function saveTrail() { sessionStorage.setItem(TRAIL, JSON.stringify(trail)); }

export async function catalogue() {
  const live = ticket();
  const q = hashQuery();
  const get = (k) => q.get(k) || '';
  const statuses = q.getAll('status');
  const inputs = {
    q: h('input', { type: 'search', name: 'q', value: get('q') }),
    name: h('input', { name: 'name', value: get('name') }),
    protocol: h('input', { name: 'protocol', value: get('protocol') }),
    capability: h('input', { name: 'capability', value: get('capability') }),
    tag: h('input', { name: 'tag', value: get('tag') }),
    resource: h('input', { name: 'resource', value: get('resource') }),
    online: h('select', { name: 'online' },
      option('', 'any', get('online')), option('true', 'online', get('online')), option('false', `offline or ${NEVER_HEARD}`, get('online'))),
    verified: h('select', { name: 'verified' },
      option('', 'any', get('verified')), option('true', 'verified A2A signature', get('verified')), option('false', 'not verified', get('verified'))),
    trusted: h('select', { name: 'trusted' },
      option('', 'any', get('trusted')), option('true', 'vouched for by the trust policy', get('trusted')), option('false', 'not trusted', get('trusted'))),
    limit: h('select', { name: 'limit' }, ...['10', '20', '50', '100'].map((n) => option(n, n, get('limit') || '20'))),
  };
  const boxes = STATUSES.map((st) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name: 'status', value: st, checked: statuses.length ? statuses.includes(st) : st !== 'disabled' }), ` ${st}`));
  const form = h('form', { role: 'search', class: 'search', 'aria-label': 'Search cards' },
    field('Search', inputs.q, 'Free text over names, descriptions, capabilities and tags, ranked.'),
    h('div', { class: 'filters' },
      field('Name contains', inputs.name),
      field('Protocols', inputs.protocol, 'Comma-separated; the card speaks all.'),
      field('Capabilities', inputs.capability, 'Exact names, comma-separated; the card has all.'),
      field('Tags', inputs.tag, 'Comma-separated; the card has all.'),
      field('Resources', inputs.resource, 'URIs, comma-separated; the card\'s resources cover all.'),
      h('fieldset', { class: 'field' }, h('legend', {}, 'Status'), ...boxes),
      field('Liveness', inputs.online),
      field('Signature', inputs.verified),
      field('Trust', inputs.trusted),
      field('Per page', inputs.limit)),
    h('button', { type: 'submit' }, 'Search'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const next = new URLSearchParams();
    for (const k of ['q', 'name', 'protocol', 'capability', 'tag', 'resource', 'online', 'verified', 'trusted']) {
      if (inputs[k].value.trim()) { next.set(k, inputs[k].value.trim()); }
    }
    const checked = boxes.map((b) => b.querySelector('input')).filter((b) => b.checked).map((b) => b.value);
    if (checked.join() !== 'active,deprecated') { for (const st of checked) { next.append('status', st); } }
    if (inputs.limit.value !== '20') { next.set('limit', inputs.limit.value); }
    go(`#/cards?${next}`);
  });

  const results = h('section', { 'aria-labelledby': 'results-title', id: 'results' }, h('h2', { id: 'results-title' }, 'Results'));
  page('Catalogue', form, results);

  const query = {
    q: get('q'), name: get('name'), protocol: list(get('protocol')), capability: list(get('capability')), tag: list(get('tag')),
    resource: list(get('resource')),
    status: statuses, online: get('online'), verified: get('verified'), trusted: get('trusted'), limit: get('limit'), cursor: get('cursor'),
  };
  const key = JSON.stringify({ ...query, cursor: undefined });
  if (trail.key !== key) { trail = { key, cursors: [] }; }
  const pageNo = Number(get('page') || '1');
  let data;
  try {
    ({ data } = await call('GET', tenantPath('/cards'), { query }));
  } catch (err) {
    results.append(h('p', { class: 'error', role: 'alert' }, `The search failed: ${errorText(err)}`));
    return;
  }
  if (!live()) { return; }
  trail.cursors[pageNo - 1] = query.cursor;
  saveTrail();
  results.append(h('p', { id: 'total', 'aria-live': 'polite' },
    `${data.total} ${data.total === 1 ? 'card matches' : 'cards match'}`, data.total > 0 ? ` · page ${pageNo}` : ''),
  h('p', { id: 'order', class: 'hint' }, query.q ? 'Ranked: best match first.' : 'Sorted by agent id.'));
  const ol = h('ol', { class: 'results', start: (pageNo - 1) * (Number(query.limit) || 20) + 1 });
  for (const hit of data.items) { ol.append(result(hit)); }
  results.append(ol);

  const nav = h('nav', { class: 'pager', 'aria-label': 'Result pages' });
  const here = new URLSearchParams(q);
  if (pageNo > 1) {
    const prev = new URLSearchParams(here);
    prev.delete('cursor');
    prev.delete('page');
    const cursor = trail.cursors[pageNo - 2];
    if (pageNo > 2 && cursor) {
      prev.set('cursor', cursor);
      prev.set('page', String(pageNo - 1));
    }
    nav.append(h('a', { href: `#/cards?${prev}`, rel: 'prev', id: 'prev-page' }, 'Previous page'));
  }
  if (data.nextCursor) {
    const next = new URLSearchParams(here);
    next.set('cursor', data.nextCursor);
    next.set('page', String(pageNo + 1));
    nav.append(h('a', { href: `#/cards?${next}`, rel: 'next', id: 'next-page' }, 'Next page'));
  }
  results.append(nav);
}

function option(value, label, selected) {
  return h('option', { value, selected: value === selected }, label);
}

function result(hit) {
  const c = hit.card;
  const matched = new Set(hit.matchedCapabilities || []);
  const caps = h('ul', { class: 'caps', 'aria-label': 'Capabilities' });
  for (const cap of c.capabilities || []) {
    const name = cap.title ? `${cap.name} (${cap.title})` : cap.name;
    caps.append(h('li', {}, matched.has(cap.name) ? h('mark', { title: 'matches the search' }, name) : name));
  }
  return h('li', { class: 'hit', 'data-agent': c.agentId },
    h('h3', {}, h('a', { href: `#/cards/${encodeURIComponent(c.agentId)}` }, c.name)),
    h('p', { class: 'meta' },
      h('code', {}, c.agentId),
      c.status && c.status !== 'active' ? badge(c.status) : null,
      liveBadge(c.liveness && c.liveness.state),
      hit.score !== undefined ? h('span', { class: 'score' }, `score ${hit.score.toFixed(2)}`) : null,
      c.protocols && c.protocols.length ? h('span', {}, c.protocols.join(', ')) : null),
    c.description ? h('p', { class: 'desc' }, c.description) : null,
    matched.size ? h('p', { class: 'matched' }, `Matched: ${[...matched].join(', ')}`) : null,
    caps);
}

// A card: its fields, liveness and status, its A2A renderings with their signature checked,
// its history from the audit trail; and the edit form, which shows the API's validation messages
// at the fields they name and keeps the user's edits through a stale revision (412).
import { allPages, call, cardPath, may, session, tenantPath } from './api.js';
import { verifyCard } from './sig.js';
import { badge, confirm, errorText, failure, field, goWith, h, list, liveBadge, notice, page, ticket, when } from './ui.js';

export async function cardPage(agentId) {
  const live = ticket();
  let res;
  try {
    res = await call('GET', cardPath(agentId));
  } catch (err) {
    if (!live()) { return; }
    page(`Card ${agentId}`, failure(err, 'The card could not be read: '), h('p', {}, h('a', { href: '#/cards' }, 'Back to the catalogue')));
    return;
  }
  const c = res.data;
  const [canWrite, canDelete] = await Promise.all([may('cards:write', `cards/${agentId}`), may('cards:delete', `cards/${agentId}`)]);
  if (!live()) { return; }
  const actions = h('div', { class: 'actions' });
  // A mirrored card changes only with its source: it has no Edit or Delete here.
  if (c.mirror) {
    actions.append(h('p', { id: 'mirrored' }, 'Mirrored, read-only, from ', h('a', { href: '#/sources' }, c.mirror.url), '.'));
  } else if (canWrite) { actions.append(h('a', { class: 'button', id: 'edit-card', href: `#/cards/${encodeURIComponent(agentId)}/edit` }, 'Edit')); }
  if (canDelete && !c.mirror) {
    actions.append(h('button', {
      type: 'button', class: 'danger', id: 'delete-card',
      onclick: () => removeCard(c),
    }, 'Delete'));
  }
  const a2a = h('section', { 'aria-labelledby': 'a2a-title', id: 'a2a' }, h('h2', { id: 'a2a-title' }, 'A2A card'));
  const history = h('section', { 'aria-labelledby': 'history-title', id: 'history' }, h('h2', { id: 'history-title' }, 'History'));
  page(c.name,
    h('p', { class: 'meta' }, h('code', {}, c.agentId), badge(c.status || 'active'), ` revision ${c.revision}`),
    actions,
    details(c),
    capabilities(c),
    liveness(c),
    a2a,
    history);
  renderA2A(a2a, c);
  renderHistory(history, c);
}

function row(term, ...value) {
  const shown = value.flat().filter((v) => v !== null && v !== undefined && v !== '');
  return shown.length ? [h('dt', {}, term), h('dd', {}, ...shown)] : [];
}

function details(c) {
  const auth = c.authRequirements;
  const dep = c.deprecation;
  return h('section', { 'aria-labelledby': 'card-title' }, h('h2', { id: 'card-title' }, 'Card'),
    h('dl', { class: 'card' },
      row('Description', c.description),
      row('Version', c.version),
      row('Endpoint', c.endpoint ? h('code', {}, c.endpoint) : ''),
      row('Protocols', (c.protocols || []).join(', ')),
      row('Tags', (c.tags || []).join(', ')),
      row('Visibility', c.visibility),
      row('Status', c.status || 'active'),
      dep ? row('Deprecation', dep.message || '', dep.successor ? [' Successor: ', h('a', { href: `#/cards/${encodeURIComponent(dep.successor)}` }, dep.successor)] : '') : [],
      auth ? row('Authentication', auth.type, auth.scopes && auth.scopes.length ? ` (scopes ${auth.scopes.join(', ')})` : '') : [],
      (c.resources || []).length ? row('Resources', c.resources.map((r) => `${r.uri}${r.access ? ` (${r.access})` : ''}`).join(', ')) : [],
      c.source ? row('Imported from', c.source.url || '') : [],
      row('Created', when(c.createdAt)),
      row('Updated', when(c.updatedAt))));
}

function capabilities(c) {
  const ul = h('ul', { class: 'capabilities' });
  for (const cap of c.capabilities || []) {
    ul.append(h('li', {},
      h('strong', {}, cap.name), cap.title ? ` · ${cap.title}` : '',
      cap.description ? h('p', {}, cap.description) : null,
      cap.tags && cap.tags.length ? h('p', { class: 'meta' }, `tags: ${cap.tags.join(', ')}`) : null));
  }
  return h('section', { 'aria-labelledby': 'caps-title' }, h('h2', { id: 'caps-title' }, `Capabilities (${(c.capabilities || []).length})`), ul);
}

function liveness(c) {
  const l = c.liveness || { state: 'unknown' };
  const probe = l.probe;
  return h('section', { 'aria-labelledby': 'live-title', id: 'liveness' }, h('h2', { id: 'live-title' }, 'Liveness'),
    h('dl', {},
      row('State', liveBadge(l.state)),
      row('Last heartbeat', l.lastSeenAt ? when(l.lastSeenAt) : 'never'),
      probe ? row('Last probe', `${probe.ok ? `answered in ${probe.latencyMs} ms` : 'failed'} ${when(probe.checkedAt)}${probe.error ? `: ${probe.error}` : ''}`) : []));
}

// renderA2A shows the card as A2A 1.0 or 0.3, as the well-known URL serves it, with the
// service's signature checked here and, for an imported card, what its own signature proved and
// whether the tenant's trust policy vouches for it.
function renderA2A(section, c) {
  const imp = c.a2a && c.a2a.import;
  if (imp) {
    const s = imp.signature || {};
    section.append(h('p', { id: 'import-signature' },
      `Imported as A2A ${imp.format}${imp.url ? ` from ${imp.url}` : ''}: its signature is `,
      badge(s.status || 'unverified', `sig-${s.status}`), s.reason ? ` (${s.reason})` : '', s.kid ? ` key ${s.kid}` : ''));
    // Whether an issuer of the tenant's trust policy vouches for it (absent on cards imported
    // before trust was weighed).
    const t = imp.trust;
    if (t) {
      section.append(h('p', { id: 'import-trust', 'data-status': t.status }, t.status === 'trusted'
        ? ['Trusted: vouched for by issuer ', h('a', { href: '#/trust' }, t.issuer), t.kid ? ` (key ${t.kid})` : '']
        : `Not trusted: ${t.reason || 'no issuer of the trust policy vouches for it'}`));
    }
  }
  const out = h('div', { id: 'a2a-body' });
  const choose = h('fieldset', { class: 'tabs' }, h('legend', {}, 'A2A version'));
  for (const [v, text] of [['', 'as served by default'], ['1.0', '1.0'], ['0.3', '0.3']]) {
    const id = `a2a-${v || 'default'}`;
    const input = h('input', { type: 'radio', name: 'a2a-version', value: v, id, checked: v === '' });
    input.addEventListener('change', () => show(v));
    choose.append(h('label', { for: id, class: 'check' }, input, ` ${text}`));
  }
  section.append(choose, out);
  const path = `/a2a/${encodeURIComponent(session.tenant)}/${encodeURIComponent(c.agentId)}/.well-known/agent-card.json`;
  section.append(h('p', { class: 'hint' }, 'Served at ', h('code', {}, path), ' (public cards without a token).'));
  let shown = 0;
  async function show(version) {
    const mine = ++shown;
    out.replaceChildren(h('p', {}, 'Loading…'));
    try {
      const { data } = await call('GET', path, { query: { version } });
      const check = await verifyCard(data);
      if (mine !== shown) { return; } // another version was chosen meanwhile
      out.replaceChildren(
        h('p', { id: 'a2a-signature', class: `sig sig-${check.state}`, 'data-state': check.state }, check.text),
        h('pre', { id: 'a2a-json', tabindex: '0', 'aria-label': `A2A ${version || 'default'} card` }, JSON.stringify(data, null, 2)));
    } catch (err) {
      if (mine !== shown) { return; }
      out.replaceChildren(err.code === 'version_not_supported'
        ? h('p', { id: 'a2a-signature', 'data-state': 'none' }, `No A2A ${version} card: ${err.message}`)
        : failure(err, 'The A2A card could not be read: '));
    }
  }
  show('');
}

async function renderHistory(section, c) {
  try {
    // The object filter is a prefix: cards/foo also finds cards/foo-bar's entries, left out here.
    const { items } = await allPages(tenantPath('/audit'), { object: `cards/${c.agentId}` }, 500);
    const mine = items.filter((e) => e.object === `cards/${c.agentId}` || e.object.startsWith(`cards/${c.agentId}/`));
    if (!mine.length) {
      section.append(h('p', {}, 'No changes recorded.'));
      return;
    }
    const body = h('tbody');
    for (const e of mine) {
      body.append(h('tr', {},
        h('td', {}, when(e.at)), h('td', {}, e.principal), h('td', {}, e.action),
        h('td', {}, e.revisionBefore || e.revisionAfter ? `${e.revisionBefore || '–'} → ${e.revisionAfter || '–'}` : ''),
        h('td', {}, e.outcome || ''), h('td', {}, e.detail || '')));
    }
    section.append(h('table', { id: 'history-table' },
      h('caption', {}, 'Changes to this card, newest first'),
      h('thead', {}, h('tr', {}, ...['When', 'Who', 'Request', 'Revision', 'Outcome', 'Detail'].map((t) => h('th', { scope: 'col' }, t)))),
      body));
  } catch (err) {
    if (err.status === 403) {
      section.append(h('p', {}, 'The history comes from the audit trail, which needs policies:manage or audit:read.'));
    } else {
      section.append(failure(err, 'The history could not be read: '));
    }
  }
}

async function removeCard(c) {
  if (!(await confirm(`Delete the card ${c.agentId} (${c.name})? Its agent can no longer be found or delegated to.`, 'Delete'))) { return; }
  try {
    await call('DELETE', cardPath(c.agentId), { headers: { 'If-Match': `"${c.revision}"` } });
    goWith('#/cards', `Deleted ${c.agentId}.`);
  } catch (err) {
    const why = err.status === 412
      ? `The card changed since this page loaded it (it is past revision ${c.revision}), so it was not deleted. Reload it, look, and delete again if you still mean to.`
      : `The card was not deleted: ${errorText(err)}`;
    notice(why, 'error');
  }
}

// The form's fields: each reads its value from a card and says how a changed value goes into
// the merge patch.
const TEXT = ['name', 'description', 'version', 'endpoint'];
const LISTS = ['protocols', 'tags'];

// formValues are a card's values as the form shows them, normalised as edited() reads the form
// (trimmed, line ends as a textarea keeps them), so that a field nobody touched compares equal.
function formValues(c) {
  const text = (v) => String(v || '').replace(/\r\n?/g, '\n').trim();
  return {
    name: text(c.name), description: text(c.description), version: text(c.version), endpoint: text(c.endpoint),
    protocols: (c.protocols || []).join(', '), tags: (c.tags || []).join(', '),
    visibility: c.visibility || 'tenant', status: c.status || 'active',
    deprecationMessage: text(c.deprecation && c.deprecation.message),
    deprecationSuccessor: text(c.deprecation && c.deprecation.successor),
    capabilities: JSON.stringify(c.capabilities || [], null, 2),
  };
}

// fieldOf is the form field an API message's field path belongs to (capabilities[2].name is
// capabilities', deprecation.successor the successor's).
function fieldOf(path) {
  if (path === 'deprecation.successor') { return 'deprecationSuccessor'; }
  if (path.startsWith('deprecation')) { return 'deprecationMessage'; }
  return path.split(/[.[]/)[0];
}

// problems splits an invalid answer's message ("name: is required; tags[0]: ...: invalid")
// into the messages it joins, each with the field it names.
export function problems(message) {
  const text = message.replace(/: invalid$/, '');
  return text.split('; ').map((part) => {
    const m = part.match(/^([A-Za-z][A-Za-z0-9_]*(?:\[\d+\]|\.[A-Za-z][A-Za-z0-9_]*)*): (.*)$/);
    return m ? { field: fieldOf(m[1]), path: m[1], text: m[2] } : { field: '', path: '', text: part };
  });
}

export async function editPage(agentId) {
  const live = ticket();
  let res;
  try {
    res = await call('GET', cardPath(agentId));
  } catch (err) {
    if (!live()) { return; }
    page(`Edit ${agentId}`, failure(err, 'The card could not be read: '));
    return;
  }
  let base = res.data;
  const allowed = await may('cards:write', `cards/${agentId}`);
  if (!live()) { return; }
  const v = formValues(base);
  const controls = {
    name: h('input', { name: 'name', value: v.name, required: true, maxlength: 200 }),
    description: h('textarea', { name: 'description', rows: 3 }, v.description),
    version: h('input', { name: 'version', value: v.version }),
    endpoint: h('input', { name: 'endpoint', type: 'url', value: v.endpoint }),
    protocols: h('input', { name: 'protocols', value: v.protocols }),
    tags: h('input', { name: 'tags', value: v.tags }),
    visibility: h('select', { name: 'visibility' }, ...['private', 'tenant', 'public'].map((x) => h('option', { value: x, selected: x === v.visibility }, x))),
    status: h('select', { name: 'status' }, ...['active', 'deprecated', 'disabled'].map((x) => h('option', { value: x, selected: x === v.status }, x))),
    deprecationMessage: h('input', { name: 'deprecationMessage', value: v.deprecationMessage }),
    deprecationSuccessor: h('input', { name: 'deprecationSuccessor', value: v.deprecationSuccessor }),
    capabilities: h('textarea', { name: 'capabilities', rows: 12, spellcheck: 'false', class: 'code' }, v.capabilities),
  };
  // touched are the fields the user changed: only they go into the patch, so a save never
  // rewrites a field the user did not edit.
  const touched = new Set();
  for (const [k, c] of Object.entries(controls)) {
    c.addEventListener('input', () => touched.add(k));
    c.addEventListener('change', () => touched.add(k));
  }
  const summary = h('div', { id: 'form-errors', role: 'alert', tabindex: '-1', hidden: true });
  const stale = h('div', { id: 'stale', role: 'alert', tabindex: '-1', hidden: true });
  const revision = h('p', { id: 'base-revision' }, `Editing revision ${base.revision}.`);
  const form = h('form', { class: 'edit', novalidate: true, id: 'edit-form' },
    revision,
    allowed ? null : h('p', { class: 'warning', id: 'not-allowed' }, 'Your token does not allow changing this card: the server will refuse a save.'),
    summary, stale,
    field('Name', controls.name),
    field('Description', controls.description),
    field('Version', controls.version),
    field('Endpoint', controls.endpoint, 'The http(s) URL tasks are sent to.'),
    field('Protocols', controls.protocols, 'Comma-separated: a2a, http, mcp, …'),
    field('Tags', controls.tags, 'Comma-separated.'),
    field('Visibility', controls.visibility),
    field('Status', controls.status),
    field('Deprecation message', controls.deprecationMessage, 'With status deprecated.'),
    field('Successor', controls.deprecationSuccessor, 'With status deprecated: the agentId that replaces this one.'),
    field('Capabilities (JSON)', controls.capabilities, 'An array of {name, title, description, tags, inputSchema, …}.'),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', id: 'save' }, 'Save'),
      h('a', { href: `#/cards/${encodeURIComponent(agentId)}`, class: 'button secondary' }, 'Cancel')));

  function clearErrors() {
    summary.hidden = true;
    summary.replaceChildren();
    for (const el of form.querySelectorAll('.field-error')) { el.hidden = true; el.textContent = ''; }
    for (const el of form.querySelectorAll('[aria-invalid]')) { el.removeAttribute('aria-invalid'); }
  }

  function showErrors(list) {
    summary.replaceChildren(h('p', {}, list.length === 1 ? 'The card was not saved: one problem.' : `The card was not saved: ${list.length} problems.`),
      h('ul', {}, ...list.map((p) => h('li', {}, p.path ? `${p.path}: ${p.text}` : p.text))));
    summary.hidden = false;
    let first = null;
    for (const p of list) {
      const control = controls[p.field];
      if (!control) { continue; }
      const err = document.getElementById(`${control.id}-error`);
      err.hidden = false;
      err.textContent = err.textContent ? `${err.textContent}; ${p.path}: ${p.text}` : `${p.path}: ${p.text}`;
      control.setAttribute('aria-invalid', 'true');
      first = first || control;
    }
    (first || summary).focus();
  }

  // patch is the merge patch of the user's edits: the touched fields whose value differs from
  // the base card's.
  function patch() {
    const now = edited();
    const was = formValues(base);
    const changed = (k) => touched.has(k) && now[k] !== was[k];
    const p = {};
    for (const k of TEXT) { if (changed(k)) { p[k] = now[k]; } }
    for (const k of LISTS) { if (changed(k)) { p[k] = list(now[k]); } }
    if (changed('visibility')) { p.visibility = now.visibility; }
    if (changed('status')) { p.status = now.status; }
    const status = now.status;
    const depChanged = changed('deprecationMessage') || changed('deprecationSuccessor');
    if (status === 'deprecated') {
      if (depChanged) {
        // Members of a merge patch merge: a cleared one is sent as null to remove it.
        p.deprecation = { message: now.deprecationMessage || null, successor: now.deprecationSuccessor || null };
      }
    } else if (depChanged && (now.deprecationMessage || now.deprecationSuccessor)) {
      const field = changed('deprecationMessage') ? 'deprecationMessage' : 'deprecationSuccessor';
      return { errors: [{ field, path: field === 'deprecationMessage' ? 'deprecation.message' : 'deprecation.successor', text: 'only a deprecated card has one: set the status to deprecated' }] };
    } else if (base.deprecation && (changed('status') || depChanged)) {
      p.deprecation = null;
    }
    if (changed('capabilities')) {
      let caps;
      try {
        caps = JSON.parse(now.capabilities);
      } catch (err) {
        return { errors: [{ field: 'capabilities', path: 'capabilities', text: `not JSON: ${err.message}` }] };
      }
      p.capabilities = caps;
    }
    return { patch: p };
  }

  // edited are the form's values in formValues' shape, as the user left them.
  function edited() {
    const now = Object.fromEntries(Object.entries(controls).map(([k, c]) => [k, c.value]));
    for (const k of [...TEXT, 'deprecationMessage', 'deprecationSuccessor']) { now[k] = now[k].replace(/\r\n?/g, '\n').trim(); }
    for (const k of LISTS) { now[k] = list(now[k]).join(', '); }
    return now;
  }

  // rebase explains a 412: the card moved on while the user edited. A field the user left alone
  // takes the new stored value (so the next save does not undo the other change); a field they
  // edited keeps their edit, with the value now stored shown under it. The next save goes over
  // the new revision and sends only the user's edits.
  async function rebase(tried) {
    let current;
    try {
      current = (await call('GET', cardPath(agentId))).data;
    } catch (err) {
      stale.replaceChildren(h('p', {}, `The card changed while you edited it, and could not be read again: ${errorText(err)}. Your edits are still in the form.`));
      stale.hidden = false;
      stale.focus();
      return;
    }
    const was = formValues(base);
    const now = formValues(current);
    const mine = edited();
    const taken = [];
    const both = [];
    for (const el of form.querySelectorAll('.now-stored')) {
      const control = el.closest('.field').querySelector('input, select, textarea');
      control.setAttribute('aria-describedby', control.getAttribute('aria-describedby').replace(` ${el.id}`, ''));
      el.remove();
    }
    for (const k of Object.keys(now)) {
      if (now[k] === was[k]) { continue; }
      if (!touched.has(k) || mine[k] === was[k]) {
        controls[k].value = now[k];
        touched.delete(k);
        taken.push(k);
      } else if (mine[k] !== now[k]) {
        both.push(k);
        const hint = h('p', { class: 'now-stored', id: `${controls[k].id}-now` }, 'Now stored: ', h('code', {}, now[k] || '(empty)'));
        controls[k].closest('.field').append(hint);
        controls[k].setAttribute('aria-describedby', `${controls[k].getAttribute('aria-describedby')} ${hint.id}`);
      }
    }
    stale.replaceChildren(...[
      h('p', {}, h('strong', {}, 'Not saved: the card changed while you were editing it. '),
        `You started from revision ${tried}; someone saved revision ${current.revision} since. Your edits are still in the form.`),
      taken.length ? h('p', {}, `Their changes to fields you had not touched are now in the form: ${taken.join(', ')}.`) : null,
      both.length ? h('p', {}, `You both changed ${both.join(', ')}: your value is in the form, theirs is shown under it as "Now stored".`) : null,
      h('p', {}, `Save again to apply your edits to revision ${current.revision}, or cancel to keep the card as it is.`),
    ].filter(Boolean));
    stale.hidden = false;
    base = current;
    revision.textContent = `Editing revision ${base.revision} (your edits kept from revision ${tried}).`;
    stale.focus();
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    const { patch: p, errors } = patch();
    if (errors) { showErrors(errors); return; }
    if (Object.keys(p).length === 0) {
      notice('Nothing changed: nothing to save.', 'info');
      return;
    }
    const tried = base.revision;
    const save = document.getElementById('save');
    save.disabled = true;
    try {
      const { data } = await call('PATCH', cardPath(agentId), {
        body: p, contentType: 'application/merge-patch+json', headers: { 'If-Match': `"${tried}"` },
      });
      goWith(`#/cards/${encodeURIComponent(agentId)}`, `Saved ${agentId}: revision ${data.revision}.`);
    } catch (err) {
      if (err.status === 412) {
        await rebase(tried);
      } else if (err.status === 400) {
        showErrors(problems(err.message));
      } else if (err.status === 403) {
        summary.replaceChildren(h('p', {}, `Refused: your token may not change this card. ${errorText(err)}`));
        summary.hidden = false;
        summary.focus();
      } else {
        summary.replaceChildren(h('p', {}, `The card was not saved: ${errorText(err)}`));
        summary.hidden = false;
        summary.focus();
      }
    } finally {
      save.disabled = false;
    }
  });
  page(`Edit ${base.name}`, h('p', { class: 'meta' }, h('code', {}, agentId)), form);
}

// Trust: the tenant's trust policy, the issuers whose keys vouch for imported cards, each bound to
// a domain; listed for anyone who may read the cards, and put and removed by holders of
// trust:manage (the admin role). A change weighs again the cards the domain covers, and the page
// says what that did.
import { call, may, tenantPath } from './api.js';
import { confirm, errorText, failure, field, h, notice, page, ticket, when } from './ui.js';

function issuerPath(domain) {
  return tenantPath(`/trust/${encodeURIComponent(domain)}`);
}

// keysText says where an issuer's keys come from: its JWKS URL, or the keys pinned in the policy.
function keysText(e) {
  if (e.jwksUrl) { return ['JWKS at ', h('code', {}, e.jwksUrl)]; }
  const keys = (e.keys && Array.isArray(e.keys.keys)) ? e.keys.keys : [];
  const kids = keys.map((k) => k.kid).filter(Boolean);
  return `${keys.length} pinned ${keys.length === 1 ? 'key' : 'keys'}${kids.length ? ` (kid ${kids.join(', ')})` : ''}`;
}

// weighed says what weighing the cards again did: "3 cards weighed: 2 trusted, 1 changed".
function weighed(w) {
  const n = (w && w.weighed) || 0;
  return `${n} ${n === 1 ? 'card' : 'cards'} weighed: ${(w && w.trusted) || 0} trusted, ${(w && w.changed) || 0} changed.`;
}

export async function trustPage() {
  const live = ticket();
  const section = h('section', { 'aria-labelledby': 'trust-title', id: 'trust' }, h('h2', { id: 'trust-title' }, 'Trusted issuers'));
  page('Trust',
    h('p', { class: 'hint' }, 'An imported card is trusted when one of its signatures verifies with a key of the issuer whose domain covers the hosts of its interfaces, and none of its signatures is invalid. A change weighs those cards again at once.'),
    section);
  let data;
  let manage;
  try {
    [{ data }, manage] = await Promise.all([call('GET', tenantPath('/trust')), may('trust:manage', 'trust')]);
  } catch (err) {
    if (!live()) { return; }
    section.append(err.status === 403
      ? h('p', { id: 'trust-refused' }, 'The trust policy is shown to those who may read every card (cards:read on cards/*).')
      : failure(err, 'The trust policy could not be read: '));
    return;
  }
  if (!live()) { return; }
  const form = manage ? issuerForm() : null;
  const rows = data.items.map((e) => h('tr', { 'data-domain': e.domain },
    h('td', {}, h('code', {}, e.domain)), h('td', { class: 'keys' }, keysText(e)), h('td', {}, when(e.updatedAt)),
    manage ? h('td', { class: 'buttons' },
      h('button', { type: 'button', class: 'small', 'aria-label': `Edit ${e.domain}`, onclick: () => form.edit(e) }, 'Edit'),
      h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove ${e.domain}`, onclick: () => remove(e) }, 'Remove')) : null));
  section.append(h('table', { id: 'trust-table' },
    h('caption', {}, `${data.total} ${data.total === 1 ? 'issuer' : 'issuers'}`),
    h('thead', {}, h('tr', {}, ...['Domain', 'Keys', 'Updated', manage ? '' : null].filter((t) => t !== null).map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows)));
  if (manage) {
    section.append(h('h3', { id: 'trust-form-title' }, 'Add or replace an issuer'), form.el);
  } else {
    section.append(h('p', { id: 'trust-readonly' }, 'The trust policy is changed by holders of trust:manage (the admin role).'));
  }
}

async function remove(e) {
  if (!(await confirm(`Remove the issuer ${e.domain}? Its keys vouch for no card from then on: the cards it covers are weighed again at once.`, 'Remove'))) { return; }
  try {
    const { data } = await call('DELETE', issuerPath(e.domain));
    notice(`Removed the issuer ${e.domain}. ${weighed(data && data.cards)}`, 'ok');
    await trustPage();
  } catch (err) {
    notice(`Not removed: ${errorText(err)}`, 'error');
  }
}

// issuerForm is the form that puts an issuer: a new domain adds one, a domain the policy has
// replaces its keys. The keys come from a JWKS URL or a JWKS pasted as JSON, as chosen.
function issuerForm() {
  const domain = h('input', { name: 'domain', id: 'trust-domain', required: true, autocomplete: 'off', spellcheck: 'false', maxlength: 253 });
  const fromURL = h('input', { type: 'radio', name: 'source', value: 'url', id: 'trust-source-url', checked: true });
  const fromKeys = h('input', { type: 'radio', name: 'source', value: 'keys', id: 'trust-source-keys' });
  const url = h('input', { name: 'jwksUrl', id: 'trust-jwks-url', type: 'url', autocomplete: 'off', spellcheck: 'false', maxlength: 2048 });
  const keys = h('textarea', { name: 'keys', id: 'trust-keys', rows: 8, autocomplete: 'off', spellcheck: 'false', class: 'code' });
  // The field of the source not chosen is hidden (its wrapper, since .field sets its display).
  const urlBox = h('div', { id: 'trust-url-box' }, field('JWKS URL', url, 'http or https; fetched now, and again as cards are weighed.'));
  const keysBox = h('div', { id: 'trust-keys-box', hidden: true },
    field('Pinned JWKS (JSON)', keys, 'Public keys only: {"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k1", "x": "…"}]}. A key gone from it vouches for nothing.'));
  const status = h('p', { id: 'trust-status', role: 'alert', hidden: true, class: 'error' });
  const source = () => (fromKeys.checked ? 'keys' : 'url');
  const showSource = () => {
    urlBox.hidden = source() !== 'url';
    keysBox.hidden = source() !== 'keys';
  };
  fromURL.addEventListener('change', showSource);
  fromKeys.addEventListener('change', showSource);
  const el = h('form', { novalidate: true, 'aria-labelledby': 'trust-form-title' },
    field('Domain', domain, 'A host name (example.com), *. and a host name for its subdomains only (*.example.com), or an IP address; a domain the policy has is replaced.'),
    h('fieldset', { class: 'field' }, h('legend', {}, 'Keys from'),
      h('label', { for: fromURL.id, class: 'check' }, fromURL, ' a JWKS URL'),
      h('label', { for: fromKeys.id, class: 'check' }, fromKeys, ' a pinned JWKS')),
    urlBox, keysBox,
    h('button', { type: 'submit', id: 'trust-save' }, 'Save'), status);
  // refuse says why the form was not sent, at the control to fix.
  const refuse = (text, control) => {
    status.hidden = false;
    status.textContent = text;
    control.focus();
  };
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.hidden = true;
    const d = domain.value.trim();
    if (!d) { refuse('Give the issuer\'s domain.', domain); return; }
    let body;
    if (source() === 'url') {
      if (!url.value.trim()) { refuse('Give the URL of the issuer\'s JWKS.', url); return; }
      body = { jwksUrl: url.value.trim() };
    } else {
      if (!keys.value.trim()) { refuse('Paste the JWKS to pin.', keys); return; }
      try {
        body = { keys: JSON.parse(keys.value) };
      } catch (err) {
        refuse(`Not saved: the pinned JWKS is not JSON: ${err.message}`, keys);
        return;
      }
    }
    try {
      const { data } = await call('PUT', issuerPath(d), { body });
      notice(`Saved the issuer ${data.issuer.domain}. ${weighed(data.cards)}`, 'ok');
      await trustPage();
    } catch (err) {
      status.hidden = false;
      status.textContent = `Not saved: ${errorText(err)}`;
    }
  });
  return {
    el,
    edit(e) {
      domain.value = e.domain;
      if (e.jwksUrl) {
        fromURL.checked = true;
        url.value = e.jwksUrl;
      } else {
        fromKeys.checked = true;
        keys.value = JSON.stringify(e.keys, null, 2);
      }
      showSource();
      (e.jwksUrl ? url : keys).focus();
    },
  };
}

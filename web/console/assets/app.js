// The console's pages, by the hash of the location: #/cards, #/cards/{agentId},
// #/cards/{agentId}/edit, #/access, #/synonyms, #/trust, #/sources, #/webhooks, #/delegations, #/tenants,
// #/login.
import { call, caps, decodeClaims, onUnauthenticated, session } from './api.js';
import { catalogue } from './catalogue.js';
import { cardPage, editPage } from './card.js';
import { accessPage } from './access.js';
import { delegationsPage } from './delegations.js';
import { synonymsPage } from './synonyms.js';
import { sourcesPage } from './sources.js';
import { trustPage } from './trust.js';
import { webhooksPage } from './webhooks.js';
import { tenantsPage } from './tenants.js';
import { errorText, field, go, h, nextRoute, notice, page, pageNotice, ticket } from './ui.js';

function loginPage(message) {
  const token = h('textarea', { name: 'token', rows: 4, required: true, autocomplete: 'off', spellcheck: 'false' });
  const tenant = h('input', { name: 'tenant', autocomplete: 'off' });
  const status = h('p', { role: 'alert', class: 'error', hidden: !message }, message || '');
  const form = h('form', { class: 'login', novalidate: true },
    field('Token', token, 'A bearer token of this service (agentcards token). It is kept in this tab only, until you sign out or close it.'),
    field('Tenant', tenant, 'Left empty: the tenant your token names. Platform admins may leave it empty.'),
    status,
    h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const value = token.value.trim();
    if (!value) {
      status.hidden = false;
      status.textContent = 'Paste a token first.';
      token.focus();
      return;
    }
    session.signIn(value, tenant.value.trim() || decodeClaims(value).tenant || '');
    try {
      await checkSession();
      signedIn = Promise.resolve(true);
      go(session.tenant ? '#/cards' : '#/tenants');
    } catch (err) {
      session.signOut();
      status.hidden = false;
      status.textContent = `Not signed in: ${errorText(err)}`;
      token.focus();
    }
  });
  page('Sign in', h('p', {}, 'The console does what your token may do, through the same API as any client.'), form);
}

// checkSession asks the server about the token: in a tenant, whether it may read there (which
// also proves the token and the tenant); without one (a platform admin), the tenant list.
async function checkSession() {
  // A platform admin is one by the token's claim or by the server's configuration
  // (auth.platformAdmins): the tenant list, which only they may read, tells.
  caps.platform = await call('GET', '/v1/tenants').then(() => true, (err) => {
    if (err.status === 403) { return false; }
    throw err;
  });
  if (session.tenant) {
    // Asking a question proves the token in the tenant: a foreign or missing one is 404.
    await call('POST', `/v1/tenants/${encodeURIComponent(session.tenant)}/authorize`,
      { body: { action: 'policies:manage', object: 'policies' } });
  } else if (!caps.platform) {
    const err = new Error('the token names no tenant: give one');
    err.noTenant = true;
    throw err;
  }
  showWho();
}

function showWho() {
  const who = document.getElementById('who');
  const nav = document.getElementById('nav');
  if (!session.token) {
    who.replaceChildren();
    nav.hidden = true;
    return;
  }
  const c = session.claims;
  nav.hidden = false;
  for (const a of nav.querySelectorAll('[data-page]')) {
    if (a.dataset.page !== 'tenants') { a.closest('li').hidden = !session.tenant; }
  }
  document.getElementById('nav-tenants').hidden = !caps.platform;
  who.replaceChildren(...[
    h('span', { id: 'who-subject' }, c.sub || '(no subject)'),
    session.tenant ? h('span', {}, ' in ', h('strong', { id: 'who-tenant' }, session.tenant)) : null,
    caps.platform ? h('span', { class: 'badge platform' }, 'platform admin') : null,
    h('button', { type: 'button', id: 'sign-out', onclick: () => { session.signOut(); showWho(); go('#/login'); } }, 'Sign out'),
  ].filter(Boolean));
}

let signedIn = null;

// ensureSession checks a token kept from earlier in this tab once per page load.
async function ensureSession() {
  if (!session.token) { return false; }
  if (!signedIn) {
    signedIn = checkSession().then(() => true, (err) => {
      signedIn = null;
      if ([401, 403, 404].includes(err.status) || err.noTenant) {
        // The token or the tenant is refused: forget them.
        session.signOut();
        loginPage(`Signed out: ${errorText(err)}`);
      } else {
        // The server failed or was not reached: keep the token and say so.
        page('The server did not answer', h('p', { class: 'error', role: 'alert' }, `${errorText(err)}. Reload the page to try again.`));
      }
      return false;
    });
  }
  return signedIn;
}

// switchTenant makes a platform admin act in another tenant.
export async function switchTenant(tenant) {
  session.tenant = tenant;
  signedIn = null;
  await ensureSession();
}

const routes = [
  [/^#\/cards\/([^/?]+)\/edit$/, (m) => editPage(decodeURIComponent(m[1]))],
  [/^#\/cards\/([^/?]+)$/, (m) => cardPage(decodeURIComponent(m[1]))],
  [/^#\/cards(\?.*)?$/, () => catalogue()],
  [/^#\/access$/, () => accessPage()],
  [/^#\/synonyms$/, () => synonymsPage()],
  [/^#\/trust$/, () => trustPage()],
  [/^#\/sources$/, () => sourcesPage()],
  [/^#\/webhooks$/, () => webhooksPage()],
  [/^#\/delegations(\?.*)?$/, () => delegationsPage()],
  [/^#\/tenants$/, () => tenantsPage()],
];

// route renders the page of the location's hash. The main area is aria-busy while it loads, and
// says which route it shows once done (data-route), which tests wait for.
async function route() {
  const hash = location.hash;
  if (hash && !hash.startsWith('#/')) { return; } // an in-page anchor, not a page
  nextRoute();
  const live = ticket();
  const main = document.getElementById('main');
  main.setAttribute('aria-busy', 'true');
  try {
    await render(hash);
  } finally {
    if (live()) {
      main.dataset.route = hash;
      main.setAttribute('aria-busy', 'false');
    }
  }
}

async function render(hash) {
  if (hash !== '#/login' && hash !== '' && hash !== '#/') { pageNotice(); }
  if (!session.token || hash === '#/login') {
    showWho();
    loginPage();
    return;
  }
  if (!(await ensureSession())) { return; }
  for (const a of document.querySelectorAll('#nav a')) {
    if (hash.startsWith(a.getAttribute('href'))) { a.setAttribute('aria-current', 'page'); } else { a.removeAttribute('aria-current'); }
  }
  for (const [re, show] of routes) {
    const m = hash.match(re);
    if (m) {
      try {
        await show(m);
      } catch (err) {
        if (err.status === 401) { return; } // the sign-in page is up already
        page('Something went wrong', h('p', { class: 'error', role: 'alert' }, errorText(err)));
      }
      return;
    }
  }
  go(session.tenant ? '#/cards' : '#/tenants');
}

onUnauthenticated((err) => {
  if (!signedIn) { return; } // signing in: the sign-in form says why
  session.signOut();
  signedIn = null;
  showWho();
  loginPage(`Your token was refused: ${err.message}. Sign in again.`);
  notice('Signed out: the server refused the token.', 'error');
});

document.getElementById('skip').addEventListener('click', (ev) => {
  ev.preventDefault();
  document.getElementById('main').focus();
});
window.addEventListener('hashchange', route);
route();

// The REST API, as the console calls it: every request carries the user's token as a bearer
// header and nothing else of theirs (no cookie, nothing in the URL).

const TOKEN = 'agentcards.token';
const TENANT = 'agentcards.tenant';

// session is the signed-in user: the token pasted, what it says of itself, and the tenant the
// console acts in. The token lives in this tab's sessionStorage only.
export const session = {
  get token() { return sessionStorage.getItem(TOKEN) || ''; },
  get tenant() { return sessionStorage.getItem(TENANT) || ''; },
  set tenant(t) { if (t) { sessionStorage.setItem(TENANT, t); } else { sessionStorage.removeItem(TENANT); } },
  // claims are the token's payload as sent, not verified here (the server verifies every call).
  get claims() { return decodeClaims(this.token); },
  signIn(token, tenant) { sessionStorage.setItem(TOKEN, token); this.tenant = tenant; },
  // signOut forgets the token and everything else the console kept in this tab.
  signOut() { sessionStorage.clear(); },
};

// caps are what the signed-in user may do beyond a page's own checks, asked at sign-in to decide
// which controls to show and what to warn of; the server still decides every request.
export const caps = { platform: false };

// decodeClaims reads a JWT's payload, or {} for anything that is not one.
export function decodeClaims(token) {
  const parts = token.split('.');
  if (parts.length !== 3) { return {}; }
  try {
    const json = new TextDecoder().decode(fromBase64URL(parts[1]));
    const claims = JSON.parse(json);
    return claims && typeof claims === 'object' ? claims : {};
  } catch {
    return {};
  }
}

export function fromBase64URL(s) {
  const b64 = s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - s.length % 4) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

export function toBase64URL(bytes) {
  let s = '';
  for (const b of bytes) { s += String.fromCharCode(b); }
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// APIError is an answer in the API's one error body: {"error": {code, message, requestId}}.
export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `the server answered ${status}`);
    this.status = status;
    this.code = e.code || '';
    this.requestId = e.requestId || '';
  }
}

// onUnauthenticated is called when the server refuses the token itself (401).
let unauthenticated = () => {};
export function onUnauthenticated(fn) { unauthenticated = fn; }

// call sends one request. query values that are arrays repeat their parameter; empty ones are
// left out. It resolves to {status, data, etag} or rejects with an APIError.
export async function call(method, path, { query, body, contentType, headers } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    for (const v of [].concat(value)) {
      if (v !== undefined && v !== null && v !== '') { url.searchParams.append(name, String(v)); }
    }
  }
  const init = {
    method,
    headers: { Accept: 'application/json', ...headers },
    credentials: 'omit',
    cache: 'no-store',
  };
  if (session.token) { init.headers.Authorization = `Bearer ${session.token}`; }
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = contentType || 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const err = new APIError(res.status, data);
    if (res.status === 401) { unauthenticated(err); }
    throw err;
  }
  return { status: res.status, data, etag: res.headers.get('ETag') };
}

// tenantPath is a path under the session's tenant.
export function tenantPath(rest) {
  return `/v1/tenants/${encodeURIComponent(session.tenant)}${rest}`;
}

export function cardPath(agentId, rest = '') {
  return tenantPath(`/cards/${encodeURIComponent(agentId)}${rest}`);
}

// may asks the server whether the signed-in user may take action on object (access.check, which
// any member may ask of themselves). A refusal to answer counts as no.
export async function may(action, object) {
  try {
    const { data } = await call('POST', tenantPath('/authorize'), { body: { action, object } });
    return Boolean(data && data.allowed);
  } catch {
    return false;
  }
}

// allPages reads up to max items of a paged list, following nextCursor.
export async function allPages(path, query, max) {
  const items = [];
  let cursor = '';
  do {
    const { data } = await call('GET', path, { query: { ...query, limit: Math.min(100, max - items.length), cursor } });
    items.push(...data.items);
    cursor = data.nextCursor || '';
  } while (cursor && items.length < max);
  return { items, more: Boolean(cursor) };
}

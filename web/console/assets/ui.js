// DOM helpers. Text from the server is only ever set as text (never as HTML), so a card's name
// or a delegation's task cannot inject markup.

// h builds an element: attributes (on* are listeners; true sets a boolean attribute; false, null
// and undefined leave it out) and children (strings become text; null and false are skipped).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';

// s builds an SVG element.
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (v === true) {
      el.setAttribute(k, '');
    } else if (v !== false && v !== null && v !== undefined) {
      el.setAttribute(k, String(v));
    }
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) { continue; }
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// page replaces the main area's content and names the page in the title. After the first page
// of a load it moves the focus to the new heading, so keyboard and screen-reader users start at
// the top of what changed (the first page leaves the focus where a fresh page has it, before
// the skip link).
export function page(title, ...children) {
  const main = document.getElementById('main');
  const heading = h('h1', { tabindex: '-1', id: 'page-title' }, title);
  main.replaceChildren(heading, ...children.flat(Infinity).filter(Boolean));
  document.title = `${title} · agentcards console`;
  if (main.dataset.route !== undefined) { heading.focus(); }
  return main;
}

// notice shows a message in the live region at the top.
export function notice(text, kind = 'info') {
  const el = document.getElementById('notice');
  el.className = `notice ${kind}`;
  el.textContent = text;
}

// route counts the pages rendered: a page that loads data before it draws itself takes a
// ticket first, and draws nothing if the user has moved on meanwhile (a slow answer must not
// replace a newer page).
let route = 0;

// nextRoute starts rendering a new page.
export function nextRoute() { route += 1; return route; }

// ticket reports, when called later, whether the page being rendered then is still the last.
export function ticket() {
  const mine = route;
  return () => mine === route;
}

// flash is a notice to show on the next page (set by goWith).
let flash = null;

// pageNotice clears the notice when a page changes, or shows the one goWith left for it.
export function pageNotice() {
  const f = flash;
  flash = null;
  notice(f ? f.text : '', f ? f.kind : 'info');
}

// goWith goes to a page and shows a notice there.
export function goWith(hash, text, kind = 'ok') {
  flash = { text, kind };
  go(hash);
}

// errorText says what went wrong with a request, with the request id a support question needs.
export function errorText(err) {
  if (err && err.status) {
    const id = err.requestId ? ` (request ${err.requestId})` : '';
    return `${err.message} [${err.status} ${err.code}]${id}`;
  }
  return String(err && err.message ? err.message : err);
}

// failure is a paragraph saying a request failed.
export function failure(err, prefix = '') {
  return h('p', { class: 'error', role: 'alert' }, prefix, errorText(err));
}

// asking resolves the question the dialog asks now; null when it asks none.
let asking = null;

// answer resolves the question being asked, once.
function answer(yes) {
  const resolve = asking;
  asking = null;
  if (resolve) { resolve(yes); }
}

// wireConfirm listens to the dialog once. The buttons answer as they are clicked: the dialog's
// close event comes later, as a task of its own, and may be dispatched only after the next
// question has opened the dialog again (a click is an input event, which the browser may run
// first), so it answers only a question still open when the dialog is closed (Escape).
function wireConfirm(dialog) {
  if (dialog.dataset.wired) { return; }
  dialog.dataset.wired = 'true';
  document.getElementById('confirm-ok').addEventListener('click', () => answer(true));
  document.getElementById('confirm-cancel').addEventListener('click', () => answer(false));
  dialog.addEventListener('close', () => { if (!dialog.open) { answer(dialog.returnValue === 'ok'); } });
}

// confirm asks a yes/no question in the page's dialog; it resolves to true on Confirm.
export function confirm(text, action = 'Confirm') {
  const dialog = document.getElementById('confirm');
  wireConfirm(dialog);
  answer(false); // a question the dialog was still asking is answered no
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = action;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    asking = resolve;
    dialog.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

// field is a labelled form control with a place for its error message.
export function field(label, control, hint) {
  const id = control.id || `f-${control.name}`;
  control.id = id;
  const errId = `${id}-error`;
  const hintId = hint ? `${id}-hint` : null;
  control.setAttribute('aria-describedby', [hintId, errId].filter(Boolean).join(' '));
  return h('div', { class: 'field', 'data-field': control.name },
    h('label', { for: id }, label),
    control,
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    h('p', { class: 'field-error', id: errId, hidden: true }));
}

export function when(t) {
  if (!t) { return ''; }
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : d.toLocaleString();
}

// lines splits a textarea's value into its trimmed lines, blank ones left out.
export function lines(value) {
  return String(value || '').split('\n').map((w) => w.trim()).filter(Boolean);
}

// list splits a comma-separated input into its trimmed, non-empty values.
export function list(value) {
  return String(value || '').split(',').map((v) => v.trim()).filter(Boolean);
}

// hashQuery reads the query part of the location's hash (#/cards?q=x).
export function hashQuery() {
  const i = location.hash.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : location.hash.slice(i + 1));
}

export function go(hash) {
  if (location.hash === hash) {
    window.dispatchEvent(new HashChangeEvent('hashchange'));
  } else {
    location.hash = hash;
  }
}

export function badge(text, kind) {
  return h('span', { class: `badge ${kind || text}` }, text);
}

// NEVER_HEARD is the one label of an agent the service has never heard from (liveness unknown),
// on every page.
export const NEVER_HEARD = 'never heard from';

// liveBadge is the badge of a liveness state: online, offline, or never heard from.
export function liveBadge(state) {
  const st = state || 'unknown';
  return badge(st === 'unknown' ? NEVER_HEARD : st, `live-${st}`);
}

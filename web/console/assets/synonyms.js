// Synonyms: the tenant's search synonym sets, listed for anyone who may read the cards, and
// added, edited and removed by holders of search:manage (the admin role).
import { call, may, tenantPath } from './api.js';
import { confirm, errorText, failure, field, h, lines, notice, page, ticket, when } from './ui.js';

function setPath(id) {
  return tenantPath(`/synonyms/${encodeURIComponent(id)}`);
}

export async function synonymsPage() {
  const live = ticket();
  const section = h('section', { 'aria-labelledby': 'synonyms-title', id: 'synonyms' }, h('h2', { id: 'synonyms-title' }, 'Synonym sets'));
  page('Synonyms',
    h('p', { class: 'hint' }, 'A query word or phrase in a set also finds the cards that say another word of the set. A change applies to the next search.'),
    section);
  let data;
  let manage;
  try {
    [{ data }, manage] = await Promise.all([call('GET', tenantPath('/synonyms')), may('search:manage', 'search')]);
  } catch (err) {
    if (!live()) { return; }
    section.append(err.status === 403
      ? h('p', { id: 'synonyms-refused' }, 'Synonym sets are shown to those who may read every card (cards:read on cards/*).')
      : failure(err, 'The synonym sets could not be read: '));
    return;
  }
  if (!live()) { return; }
  const form = manage ? setForm() : null;
  const rows = data.items.map((s) => h('tr', { 'data-id': s.id },
    h('td', {}, h('code', {}, s.id)), h('td', {}, s.words.join(', ')), h('td', {}, when(s.updatedAt)),
    manage ? h('td', { class: 'buttons' },
      h('button', { type: 'button', class: 'small', 'aria-label': `Edit ${s.id}`, onclick: () => form.edit(s) }, 'Edit'),
      h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove ${s.id}`, onclick: () => remove(s) }, 'Remove')) : null));
  section.append(h('table', { id: 'synonyms-table' },
    h('caption', {}, `${data.total} synonym ${data.total === 1 ? 'set' : 'sets'}`),
    h('thead', {}, h('tr', {}, ...['Id', 'Words', 'Updated', manage ? '' : null].filter((t) => t !== null).map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows)));
  if (manage) {
    section.append(h('h3', { id: 'synonym-form-title' }, 'Add or edit a set'), form.el);
  } else {
    section.append(h('p', { id: 'synonyms-readonly' }, 'Synonym sets are managed by holders of search:manage (the admin role).'));
  }
}

async function remove(s) {
  if (!(await confirm(`Remove the synonym set ${s.id} (${s.words.join(', ')})? Searches stop using it at once.`, 'Remove'))) { return; }
  try {
    await call('DELETE', setPath(s.id));
    notice(`Removed the synonym set ${s.id}.`, 'ok');
    await synonymsPage();
  } catch (err) {
    notice(`Not removed: ${errorText(err)}`, 'error');
  }
}

// setForm is the form that puts a set: a new id adds one, an existing id replaces its words.
function setForm() {
  const id = h('input', { name: 'id', id: 'synonym-id', required: true, autocomplete: 'off', spellcheck: 'false', maxlength: 64 });
  const list = h('textarea', { name: 'words', id: 'synonym-words', rows: 5, required: true, autocomplete: 'off' });
  const status = h('p', { id: 'synonym-status', role: 'alert', hidden: true, class: 'error' });
  const el = h('form', { novalidate: true, 'aria-labelledby': 'synonym-form-title' },
    field('Id', id, 'Lowercase letters, digits, _ . and -; an id the tenant has replaces that set.'),
    field('Words', list, 'One word or phrase a line: 2 to 32, each up to 100 bytes.'),
    h('button', { type: 'submit', id: 'synonym-save' }, 'Save'), status);
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.hidden = true;
    const setID = id.value.trim();
    if (!setID) {
      status.hidden = false;
      status.textContent = 'Give the set an id.';
      id.focus();
      return;
    }
    try {
      await call('PUT', setPath(setID), { body: { words: lines(list.value) } });
      notice(`Saved the synonym set ${setID}.`, 'ok');
      await synonymsPage();
    } catch (err) {
      status.hidden = false;
      status.textContent = `Not saved: ${errorText(err)}`;
    }
  });
  return {
    el,
    edit(s) {
      id.value = s.id;
      list.value = s.words.join('\n');
      list.focus();
    },
  };
}

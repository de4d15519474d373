// The queue: counts by status (boxes that filter the list), the tasks a page at a time, newest
// first — searched by title or id and filtered by status, queue, owner, agent and created time —
// with a box on each row for cancelling or retrying many at once, and the form that adds a task.

import {$, ago, armed, debounce, dollars, el, patchList, pill, toast} from './dom.js';
import {reviewOverdue} from './detail.js';
import {getJson, send} from './api.js';

export const STATUSES = ['ready', 'running', 'waiting', 'review', 'blocked', 'done', 'failed', 'cancelled', 'approved'];
export const PAGE = 50;  // tasks a page
const MAX_PICKED = 1000;  // the most one bulk request takes

// A value of a datetime-local input (this browser's time zone) as the API's ISO-8601 UTC.
function isoOf(local) {
  const ms = Date.parse(local);
  return isNaN(ms) ? '' : new Date(ms).toISOString();
}

export function createTasks({selectTask, changed}) {
  const tbody = $('#task-table tbody');
  const countsBox = $('#counts');
  const tabs = $('#status-tabs');
  const form = $('#filter-form');
  const search = $('#task-search');
  let status = '';
  let selected = null;
  let counts = {};
  const titles = new Map();  // task id → title, for the pool's cards
  const picked = new Set();  // task ids ticked for a bulk action
  // Pages go by cursor (newest first): cursors[i] is where page i starts, null for the first.
  let cursors = [null];
  let nextCursor = null;
  let shown = [];  // the tasks of the page on screen
  let asked = 0;  // requests made; only the answer to the latest is shown

  // The query of the filters as set, without paging.
  function filterQuery() {
    const q = new URLSearchParams();
    if (status) q.set('status', status);
    if (search.value.trim()) q.set('q', search.value.trim());
    const f = form.elements;
    for (const k of ['queue', 'owner', 'agent']) if (f[k].value.trim()) q.set(k, f[k].value.trim());
    const range = f.range.value;
    if (range === 'custom') {
      if (isoOf(f.since.value)) q.set('since', isoOf(f.since.value));
      if (isoOf(f.until.value)) q.set('until', isoOf(f.until.value));
    } else if (range) {
      q.set('since', range);
    }
    return q;
  }

  // Whether anything but the status narrows the list (then the counts do not say how many).
  function narrowed() {
    const q = filterQuery();
    q.delete('status');
    return [...q.keys()].length > 0;
  }

  // A filter may have changed: when it did, back to the first page. (The search calls this as
  // the typing pauses and again on Enter; the second changes nothing, and the page stays.)
  let lastQuery = '';
  function filtersChanged() {
    const q = filterQuery();
    const n = [...q.keys()].filter((k) => k !== 'status' && k !== 'q').length;
    $('#filters-on').textContent = n ? `(${n} on)` : '';
    $('#filter-between').hidden = form.elements.range.value !== 'custom';
    if (q.toString() === lastQuery) return;
    lastQuery = q.toString();
    cursors = [null];
    changed();
  }

  function setStatus(s) {
    status = s;
    renderCounts(counts);
    filtersChanged();
  }

  let countsSig = '';
  function renderCounts(c) {
    counts = c || {};
    const sig = JSON.stringify([counts, status]);
    if (sig === countsSig) return;
    countsSig = sig;
    const total = STATUSES.reduce((n, s) => n + (counts[s] || 0), 0);
    $('#queue-total').textContent = total + ' tasks';
    const boxes = STATUSES.filter((s) => s !== 'approved' || counts[s]).map((s) =>
      el('button', {type: 'button', class: 'count-box' + (status === s ? ' selected' : ''),
                    dataset: {status: s, count: counts[s] || 0}, onclick: () => setStatus(status === s ? '' : s)},
         el('span', {class: 'n'}, String(counts[s] || 0)), el('span', {class: 'label'}, s)));
    countsBox.replaceChildren(...boxes);
    const names = ['', 'ready', 'running', 'waiting', 'review', 'blocked', 'done', 'failed', 'cancelled'];
    tabs.replaceChildren(...names.map((s) => el('button', {type: 'button', class: status === s ? 'selected' : '',
      dataset: {filter: s}, onclick: () => setStatus(s)}, s || 'all', s && counts[s] ? ' ' + counts[s] : '')));
  }

  function costOf(t) {
    const u = t.usage;
    return u ? dollars(u.cost_usd) + (u.cost_estimated ? '~' : '') : '–';
  }

  function renderList(list) {
    shown = list;
    for (const t of list) titles.set(t.id, t.title);
    $('#tasks-empty').hidden = list.length > 0;
    patchList(tbody, list, (t) => ({
      key: t.id,
      view: [t.status, t.title, t.attempt, t.max_attempts, t.updated_at, t.id === selected, reviewOverdue(t),
             t.unclaimable || '', costOf(t), picked.has(t.id)],
      attrs: () => el('tr', {class: t.id === selected ? 'selected' : '', tabindex: 0, dataset: {key: t.id, taskId: t.id, status: t.status}}),
      build: () => [
        el('td', {class: 'pick'}, el('input', {type: 'checkbox', dataset: {pick: t.id}, checked: picked.has(t.id),
                                               'aria-label': 'select ' + t.id})),
        el('td', {title: t.title}, el('span', {class: 'task-title'}, t.title || '(untitled)'), el('span', {class: 'task-id'}, t.id)),
        el('td', {}, pill(t.status), reviewOverdue(t) ? el('span', {class: 'pill overdue task-overdue', title: 'waiting in review longer than the review timeout'}, 'overdue') : null,
           t.unclaimable ? el('span', {class: 'pill unclaimable task-unclaimable', title: 'no worker can claim it now: ' + t.unclaimable}, 'no worker') : null),
        el('td', {class: 'hide-sm'}, t.attempt + '/' + t.max_attempts),
        el('td', {class: 'cost', title: t.usage ? `${t.usage.attempts} attempt(s) of an agent, ${t.usage.turns} turn(s)` : ''}, costOf(t)),
        el('td', {class: 'hide-sm muted', title: t.updated_at}, ago(t.updated_at)),
      ],
    }));
    for (const tr of tbody.children) tr.classList.toggle('selected', tr.dataset.taskId === selected);
    renderPicked();
    renderPager();
  }

  function renderPager() {
    const i = cursors.length - 1;
    const from = i * PAGE + 1;
    const to = i * PAGE + shown.length;
    const total = narrowed() ? null : status ? counts[status] : STATUSES.reduce((n, s) => n + (counts[s] || 0), 0);
    $('#page-info').textContent = shown.length
      ? `${from}–${to}` + (total !== null && total !== undefined ? ' of ' + total : '')
      : (i ? 'no more' : '');
    $('#pager').dataset.page = String(i + 1);
    $('#page-prev').disabled = i === 0;
    $('#page-next').disabled = !nextCursor;
  }

  function renderPicked() {
    const n = picked.size;
    $('#bulk-bar').hidden = n === 0;
    $('#bulk-count').textContent = `${n} selected`;
    const onPage = shown.filter((t) => picked.has(t.id)).length;
    const all = $('#pick-page');
    all.checked = shown.length > 0 && onPage === shown.length;
    all.indeterminate = onPage > 0 && onPage < shown.length;
  }

  async function refresh() {
    const mine = ++asked;
    const q = filterQuery();
    q.set('order', 'desc');
    q.set('limit', String(PAGE));
    const cursor = cursors[cursors.length - 1];
    if (cursor) q.set('cursor', cursor);
    const page = await getJson('/api/tasks?' + q.toString());
    if (mine !== asked) return;  // the filters changed meanwhile: a newer answer is coming
    nextCursor = page.next_cursor || null;
    renderList(page.tasks || []);
  }

  function pick(id, on) {
    if (on && picked.size >= MAX_PICKED) {
      toast(`At most ${MAX_PICKED} tasks at a time`, 'error');
      return false;
    }
    if (on) picked.add(id);
    else picked.delete(id);
    return true;
  }

  tbody.addEventListener('change', (ev) => {
    const box = ev.target.closest('input[data-pick]');
    if (!box) return;
    if (!pick(box.dataset.pick, box.checked)) box.checked = false;
    renderPicked();
  });
  tbody.addEventListener('click', (ev) => {
    if (ev.target.closest('td.pick')) return;  // ticking a box opens nothing
    const tr = ev.target.closest('tr[data-task-id]');
    if (tr) selectTask(tr.dataset.taskId);
  });
  tbody.addEventListener('keydown', (ev) => {
    if (ev.target.closest('td.pick')) return;
    const tr = ev.target.closest('tr[data-task-id]');
    if (tr && (ev.key === 'Enter' || ev.key === ' ')) {
      ev.preventDefault();
      selectTask(tr.dataset.taskId);
    }
  });
  $('#pick-page').addEventListener('change', (ev) => {
    for (const t of shown) if (!pick(t.id, ev.target.checked)) break;
    for (const box of tbody.querySelectorAll('input[data-pick]')) box.checked = picked.has(box.dataset.pick);
    renderPicked();
  });

  // Cancel or retry the ticked tasks: one request, each task's outcome reported.
  async function bulk(action, button) {
    const ids = [...picked];
    button.disabled = true;
    try {
      const r = await send('POST', '/api/tasks/' + action, {ids});
      const refused = (r.results || []).filter((x) => !x.ok);
      for (const x of r.results || []) if (x.ok) picked.delete(x.id);
      const verb = action === 'cancel' ? 'Cancelled' : 'Queued again';
      toast(`${verb} ${r.ok} task${r.ok === 1 ? '' : 's'}`);
      if (refused.length) {
        toast(`${refused.length} not ${action === 'cancel' ? 'cancelled' : 'retried'}: ` +
              refused.slice(0, 3).map((x) => x.error.message).join('; ') + (refused.length > 3 ? '; …' : ''), 'error');
      }
    } catch (e) {
      toast(`Could not ${action} the tasks: ` + (e.noRoute ? 'this tx server cannot do that yet' : e.message), 'error');
    } finally {
      button.disabled = false;
      renderPicked();
      changed();
    }
  }
  $('#bulk-bar').addEventListener('click', (ev) => {
    const b = ev.target.closest('button[data-bulk]');
    if (!b) return;
    if (b.dataset.bulk === 'clear') {
      picked.clear();
      for (const box of tbody.querySelectorAll('input[data-pick]')) box.checked = false;
      renderPicked();
      return;
    }
    if (b.dataset.bulk === 'cancel' && !armed(b)) return;
    bulk(b.dataset.bulk, b);
  });

  // Paging: forward by the cursor the server gave, back by the ones kept.
  $('#page-next').addEventListener('click', () => {
    if (!nextCursor) return;
    cursors.push(nextCursor);
    changed();
  });
  $('#page-prev').addEventListener('click', () => {
    if (cursors.length > 1) cursors.pop();
    changed();
  });

  // The search follows the typing; the filters, each change.
  const searched = debounce(filtersChanged, 250, 1000);
  search.addEventListener('input', searched);
  search.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') filtersChanged();
  });
  form.addEventListener('change', filtersChanged);
  form.addEventListener('input', (ev) => {
    if (ev.target.type !== 'datetime-local' && ev.target.tagName !== 'SELECT') searched();
  });
  form.addEventListener('reset', () => setTimeout(filtersChanged));  // after the fields clear
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    filtersChanged();
  });

  // The form: a command is sent as the string typed (the server splits it like a shell, without
  // running one); empty fields are left out so the server's defaults apply.
  const addForm = $('#add-form');
  const toggle = $('#add-toggle');
  function showForm(on) {
    addForm.hidden = !on;
    toggle.hidden = on;
    if (on) addForm.elements.title.focus();
  }
  toggle.addEventListener('click', () => showForm(true));
  $('#add-cancel').addEventListener('click', () => showForm(false));
  addForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = addForm.elements;
    const body = {title: f.title.value.trim()};
    if (f.command.value.trim()) body.command = f.command.value.trim();
    if (f.priority.value !== '' && Number(f.priority.value) !== 0) body.priority = Number(f.priority.value);
    if (f.queue.value.trim()) body.queue = f.queue.value.trim();
    if (f.description.value.trim()) body.description = f.description.value.trim();
    if (f.agent.value.trim()) body.agent = f.agent.value.trim();
    if (f.timeout.value.trim()) body.timeout = f.timeout.value.trim();
    if (f.max_attempts.value !== '') body.max_attempts = Number(f.max_attempts.value);
    if (f.review.checked) body.review = true;
    const submit = addForm.querySelector('button[type=submit]');
    submit.disabled = true;
    try {
      const task = await send('POST', '/api/tasks', body);
      toast('Added ' + task.id + ': ' + task.title);
      f.title.value = '';
      titles.set(task.id, task.title);
      // Shown at the top of the first page, whatever the filters were.
      if (status && status !== task.status) status = '';
      search.value = '';
      form.reset();
      cursors = [null];
      renderCounts(counts);
      selectTask(task.id);
      filtersChanged();
      changed();
    } catch (e) {
      toast('Could not add the task: ' + e.message, 'error');
    } finally {
      submit.disabled = false;
    }
  });

  return {
    refresh,
    renderCounts,
    titles,
    select(id) {
      selected = id;
      for (const tr of tbody.children) tr.classList.toggle('selected', tr.dataset.taskId === id);
    },
  };
}

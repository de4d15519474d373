// The queue: counts by status (boxes that filter the list), the newest tasks of the chosen status,
// and the form that adds a task.

import {$, ago, el, patchList, pill, toast} from './dom.js';
import {reviewOverdue} from './detail.js';
import {getJson, send} from './api.js';

export const STATUSES = ['ready', 'running', 'waiting', 'review', 'blocked', 'done', 'failed', 'cancelled', 'approved'];
const SHOWN = 200;  // the newest this many tasks of the chosen status are listed
const PAGE = 200;
const MAX_PAGES = 500;

// The API pages tasks oldest first by a cursor. To list the newest without reading every task at
// each refresh, remember where the second-to-last page began and start there next time; go back
// to the start when that no longer yields a full list (tasks left the status).
class NewestTasks {
  constructor() {
    this.start = new Map();  // status filter → cursor
  }

  async load(status) {
    const base = '/api/tasks?limit=' + PAGE + (status ? '&status=' + encodeURIComponent(status) : '');
    const from = this.start.get(status) ?? null;
    const cursors = [from];
    const pages = [];
    let cursor = from;
    for (let i = 0; i < MAX_PAGES; i++) {
      const page = await getJson(base + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
      pages.push(page.tasks);
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
      cursors.push(cursor);
    }
    const tail = pages.slice(-2).flat();
    if (from !== null && tail.length < SHOWN) {
      this.start.delete(status);
      return this.load(status);
    }
    this.start.set(status, cursors[Math.max(0, pages.length - 2)]);
    return tail.slice(-SHOWN).reverse();
  }
}

export function createTasks({selectTask, changed}) {
  const newest = new NewestTasks();
  const tbody = $('#task-table tbody');
  const countsBox = $('#counts');
  const tabs = $('#status-tabs');
  let filter = '';
  let selected = null;
  let counts = {};
  const titles = new Map();  // task id → title, for the pool's cards

  function setFilter(f) {
    filter = f;
    renderCounts(counts);
    changed();
  }

  let countsSig = '';
  function renderCounts(c) {
    counts = c || {};
    const sig = JSON.stringify([counts, filter]);
    if (sig === countsSig) return;
    countsSig = sig;
    const total = STATUSES.reduce((n, s) => n + (counts[s] || 0), 0);
    $('#queue-total').textContent = total + ' tasks';
    const boxes = STATUSES.filter((s) => s !== 'approved' || counts[s]).map((s) =>
      el('button', {type: 'button', class: 'count-box' + (filter === s ? ' selected' : ''),
                    dataset: {status: s, count: counts[s] || 0}, onclick: () => setFilter(filter === s ? '' : s)},
         el('span', {class: 'n'}, String(counts[s] || 0)), el('span', {class: 'label'}, s)));
    countsBox.replaceChildren(...boxes);
    const names = ['', 'ready', 'running', 'waiting', 'review', 'blocked', 'done', 'failed', 'cancelled'];
    tabs.replaceChildren(...names.map((s) => el('button', {type: 'button', class: filter === s ? 'selected' : '',
      dataset: {filter: s}, onclick: () => setFilter(s)}, s || 'all', s && counts[s] ? ' ' + counts[s] : '')));
  }

  function renderList(list) {
    for (const t of list) titles.set(t.id, t.title);
    $('#tasks-empty').hidden = list.length > 0;
    patchList(tbody, list, (t) => ({
      key: t.id,
      view: [t.status, t.title, t.attempt, t.max_attempts, t.updated_at, t.id === selected, reviewOverdue(t), t.unclaimable || ''],
      attrs: () => el('tr', {class: t.id === selected ? 'selected' : '', tabindex: 0, dataset: {key: t.id, taskId: t.id, status: t.status}}),
      build: () => [
        el('td', {title: t.title}, el('span', {class: 'task-title'}, t.title || '(untitled)'), el('span', {class: 'task-id'}, t.id)),
        el('td', {}, pill(t.status), reviewOverdue(t) ? el('span', {class: 'pill overdue task-overdue', title: 'waiting in review longer than the review timeout'}, 'overdue') : null,
           t.unclaimable ? el('span', {class: 'pill unclaimable task-unclaimable', title: 'no worker can claim it now: ' + t.unclaimable}, 'no worker') : null),
        el('td', {class: 'hide-sm'}, t.attempt + '/' + t.max_attempts),
        el('td', {class: 'hide-sm muted', title: t.updated_at}, ago(t.updated_at)),
      ],
    }));
    for (const tr of tbody.children) tr.classList.toggle('selected', tr.dataset.taskId === selected);
  }

  async function refresh() {
    renderList(await newest.load(filter));
  }

  tbody.addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-task-id]');
    if (tr) selectTask(tr.dataset.taskId);
  });
  tbody.addEventListener('keydown', (ev) => {
    const tr = ev.target.closest('tr[data-task-id]');
    if (tr && (ev.key === 'Enter' || ev.key === ' ')) {
      ev.preventDefault();
      selectTask(tr.dataset.taskId);
    }
  });

  // The form: a command is sent as the string typed (the server splits it like a shell, without
  // running one); empty fields are left out so the server's defaults apply.
  const form = $('#add-form');
  const toggle = $('#add-toggle');
  function showForm(on) {
    form.hidden = !on;
    toggle.hidden = on;
    if (on) form.elements.title.focus();
  }
  toggle.addEventListener('click', () => showForm(true));
  $('#add-cancel').addEventListener('click', () => showForm(false));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = form.elements;
    const body = {title: f.title.value.trim()};
    if (f.command.value.trim()) body.command = f.command.value.trim();
    if (f.priority.value !== '' && Number(f.priority.value) !== 0) body.priority = Number(f.priority.value);
    if (f.queue.value.trim()) body.queue = f.queue.value.trim();
    if (f.description.value.trim()) body.description = f.description.value.trim();
    if (f.agent.value.trim()) body.agent = f.agent.value.trim();
    if (f.timeout.value.trim()) body.timeout = f.timeout.value.trim();
    if (f.max_attempts.value !== '') body.max_attempts = Number(f.max_attempts.value);
    if (f.review.checked) body.review = true;
    const submit = form.querySelector('button[type=submit]');
    submit.disabled = true;
    try {
      const task = await send('POST', '/api/tasks', body);
      toast('Added ' + task.id + ': ' + task.title);
      f.title.value = '';
      titles.set(task.id, task.title);
      if (filter && filter !== task.status) filter = '';
      renderCounts(counts);
      selectTask(task.id);
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

// A worker's history, under the pool: its attempts newest first, a page at a time (GET
// /api/workers/ID/attempts), each with its task, when it started, how long it took, how it ended
// and what its agent cost. Opened from a worker's name anywhere on the page.

import {$, dollars, el, fmtAge, stamp, toMs, toast} from './dom.js';
import {getJson, seg} from './api.js';

const PAGE = 20;

export function createWorkerView({selectTask}) {
  const box = $('#worker-view');
  const tbody = $('#worker-attempts tbody');
  let id = null;
  let cursors = [null];  // where each page starts (null: the newest), as for the task list
  let next = null;
  let asked = 0;
  let supported = true;

  function row(a) {
    const started = toMs(a.started_at);
    const ended = toMs(a.ended_at);
    const took = started ? fmtAge((ended || Date.now()) - started) : '–';
    const end = a.end_reason ? a.end_reason + (a.exit_code !== null && a.exit_code !== undefined ? ' (' + a.exit_code + ')' : '') : a.status;
    const cost = a.cost_usd === null || a.cost_usd === undefined ? '–' : dollars(a.cost_usd) + (a.cost_estimated ? '~' : '');
    return el('tr', {dataset: {token: a.token, taskId: a.task_id, status: a.status}},
              el('td', {title: a.task_title || ''}, el('a', {dataset: {task: a.task_id}, href: '#' + a.task_id}, a.task_title || a.task_id),
                 el('div', {class: 'task-id'}, a.task_id)),
              el('td', {}, String(a.n)), el('td', {class: 'hide-sm'}, stamp(a.started_at)), el('td', {}, took),
              el('td', {}, end || '–'), el('td', {class: 'cost'}, cost));
  }

  function render(r) {
    const w = r.worker;
    box.dataset.workerId = w.id;
    const name = $('#worker-view-name');
    name.textContent = w.name && w.name !== w.id ? `${w.name} (${w.id})` : w.id;
    $('#worker-view-meta').textContent = [w.slot, w.status, w.hostname ? 'on ' + w.hostname : ''].filter(Boolean).join(' · ');
    const attempts = r.attempts || [];
    tbody.replaceChildren(...attempts.map(row));
    if (!attempts.length) tbody.replaceChildren(el('tr', {}, el('td', {colspan: 6, class: 'muted'}, 'no attempts yet')));
    const i = cursors.length - 1;
    $('#worker-page').textContent = attempts.length ? `${i * PAGE + 1}–${i * PAGE + attempts.length}` : '';
    $('#worker-prev').disabled = i === 0;
    $('#worker-next').disabled = !next;
  }

  async function load() {
    if (!id) return;
    const want = id;
    const mine = ++asked;
    const cursor = cursors[cursors.length - 1];
    const r = await getJson(`/api/workers/${seg(want)}/attempts?limit=${PAGE}` +
                            (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    if (mine !== asked || want !== id) return;
    next = r.next_cursor || null;
    render(r);
  }

  function close() {
    id = null;
    box.hidden = true;
    delete box.dataset.workerId;
  }

  async function open(workerId) {
    if (!supported) {
      toast('This tx server cannot show a worker\'s attempts yet', 'error');
      return;
    }
    id = workerId;
    cursors = [null];
    next = null;
    box.hidden = false;
    tbody.replaceChildren();
    try {
      await load();
      box.scrollIntoView({block: 'nearest'});
    } catch (e) {
      if (e.noRoute) supported = false;
      close();
      toast(`Could not read the attempts of ${workerId}: ` + (e.noRoute ? 'this tx server cannot do that yet' : e.message), 'error');
    }
  }

  tbody.addEventListener('click', (ev) => {
    const a = ev.target.closest('a[data-task]');
    if (!a) return;
    ev.preventDefault();
    selectTask(a.dataset.task);
  });
  $('#worker-view-close').addEventListener('click', close);
  $('#worker-next').addEventListener('click', () => {
    if (!next) return;
    cursors.push(next);
    load().catch((e) => toast(e.message, 'error'));
  });
  $('#worker-prev').addEventListener('click', () => {
    if (cursors.length > 1) cursors.pop();
    load().catch((e) => toast(e.message, 'error'));
  });

  return {
    open,
    load,
    get id() {
      return id;
    },
  };
}

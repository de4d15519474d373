// The event stream: one EventSource on /api/events (it resumes by itself with Last-Event-ID), the
// feed of the newest events, and a callback per event for the panels that follow the store.

import {$, clock, el} from './dom.js';
import {getJson, token} from './api.js';

const KEEP = 200;  // events kept in the feed
const HISTORY = 60;  // events shown from before the page opened

function kindOf(type) {
  if (/dead|crashed|failed|lost|expired|orphan|stale/.test(type)) return 'bad';
  if (/done|registered|approved|running$/.test(type)) return 'good';
  if (/requeued|retry|retried|cancelled|paused|stopp|released|forced|review|requested|asked/.test(type)) return 'warn';
  if (type.startsWith('task.')) return 'task';
  return '';
}

// A short line of what an event says beyond its type: the worker's name, the exit, the reason.
function summary(e) {
  const d = e.data || {};
  const parts = [];
  if (d.slot || d.name) parts.push(d.slot || d.name);
  else if (e.worker_id) parts.push(e.worker_id);
  for (const k of ['title', 'description', 'reason', 'error', 'question', 'answer', 'from', 'to', 'exit_code', 'attempt', 'note']) {
    if (d[k] !== undefined && d[k] !== null && d[k] !== '' && typeof d[k] !== 'object') parts.push(k === 'title' ? '“' + d[k] + '”' : k + ' ' + d[k]);
    if (parts.length >= 4) break;
  }
  return parts.join(' · ');
}

// The last event id, from /metrics (the stream itself starts at "now" without one).
async function lastEventId() {
  try {
    const res = await fetch('/metrics', {cache: 'no-store', headers: token() ? {Authorization: 'Bearer ' + token()} : {}});
    const m = /^tx_events_last_id (\d+)/m.exec(await res.text());
    return m ? Number(m[1]) : 0;
  } catch (_) {
    return 0;
  }
}

export function createEvents({onEvent, selectTask}) {
  const feed = $('#feed');
  const live = $('#live');
  let source = null;
  let lastId = null;
  let paramSupported = null;  // whether the server takes ?access_token= (EventSource sends no headers)
  let received = 0;

  function setLive(state, text) {
    live.dataset.state = state;
    live.textContent = text;
  }

  function add(e, fresh) {
    received++;
    const item = el('li', {class: fresh ? 'fresh' : '', dataset: {id: e.id, type: e.type}},
        el('time', {datetime: e.at, title: e.at}, clock(e.at)),
        el('span', {class: 'etype ' + kindOf(e.type)}, e.type,
           e.task_id ? [' ', el('a', {dataset: {task: e.task_id}, href: '#' + e.task_id}, e.task_id)] : null),
        el('span', {class: 'what', title: JSON.stringify(e.data || {})}, summary(e)));
    feed.prepend(item);
    while (feed.children.length > KEEP) feed.lastChild.remove();
    $('#events-count').textContent = '#' + e.id;
  }

  async function tokenParam() {
    const t = token();
    if (!t) return '';
    if (paramSupported === null) {
      try {
        await getJson('/api/events?limit=1&access_token=' + encodeURIComponent(t));
        paramSupported = true;
      } catch (e) {
        paramSupported = e.status !== 400;  // 400: the parameter is unknown here
      }
    }
    return paramSupported ? '&access_token=' + encodeURIComponent(t) : '';
  }

  async function connect() {
    if (source) source.close();
    let replayUntil = lastId ?? 0;  // events up to here are history, not news
    if (lastId === null) {
      replayUntil = await lastEventId();
      lastId = Math.max(0, replayUntil - HISTORY);
    }
    const url = '/api/events?after=' + lastId + (await tokenParam());
    setLive('connecting', 'connecting');
    source = new EventSource(url);
    source.onopen = () => setLive('live', 'live');
    source.onerror = () => setLive(source.readyState === EventSource.CLOSED ? 'down' : 'connecting', 'reconnecting');
    source.onmessage = (m) => {
      let e;
      try {
        e = JSON.parse(m.data);
      } catch (_) {
        return;
      }
      lastId = e.id;
      add(e, e.id > replayUntil);
      onEvent(e);
    };
  }

  feed.addEventListener('click', (ev) => {
    const a = ev.target.closest('a[data-task]');
    if (!a) return;
    ev.preventDefault();
    selectTask(a.dataset.task);
  });
  window.addEventListener('tx:token', () => {
    paramSupported = null;
    connect();
  });

  return {
    connect,
    get received() {
      return received;
    },
  };
}

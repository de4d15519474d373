// The dashboard's entry point: wires the panels to the API. Every event from the stream refreshes
// the pool, the queue and the open task after a short quiet time (150 ms); a 5 s poll is the
// fallback when the stream is down, and heartbeat ages tick every second in between.
// Routes an older server lacks (404 "no route") hide what needs them instead of failing.

import {adoptTokenFromUrl, getJson, getText, send, seg, setToken, token} from './api.js';
import {$, debounce, fmtAge, toast} from './dom.js';
import {drawChart} from './chart.js';
import {createDetail} from './detail.js';
import {createEvents} from './events.js';
import {createPool} from './pool.js';
import {createTasks} from './tasks.js';

const HOUR = 3600 * 1000;
const BUCKET = 60 * 1000;

adoptTokenFromUrl();

const support = {orchestrator: true, stats: true};
let orch = null;
let workers = [];
let detailDirty = false;

const pool = createPool({selectTask, act: workerAction});
const tasks = createTasks({selectTask, changed: () => schedule()});
const detail = createDetail({
  changed: () => schedule(),
  onSelect(id) {
    tasks.select(id);
    history.replaceState(null, '', id ? '#' + id : location.pathname + location.search);
  },
});
const events = createEvents({onEvent, selectTask});

function selectTask(id) {
  detail.select(id);
}

// Errors of the background refreshes are shown once each, not at every refresh.
const reported = new Map();
function report(e) {
  const last = reported.get(e.message) || 0;
  if (Date.now() - last < 30000) return;
  reported.set(e.message, Date.now());
  toast(e.message, 'error');
}

// Counts by status and whether an orchestrator runs, from /metrics (when there is no
// GET /api/orchestrator, or it has no queue).
async function fromMetrics() {
  const text = await getText('/metrics');
  const counts = {};
  for (const m of text.matchAll(/^tx_tasks\{[^}]*status="([a-z_]+)"[^}]*\} (\d+)/gm)) {
    counts[m[1]] = (counts[m[1]] || 0) + Number(m[2]);
  }
  const up = /^tx_orchestrator_up 1/m.test(text);
  return {counts, up};
}

function renderHeader(status) {
  const pillEl = $('#orch-status');
  pillEl.dataset.status = status || 'unknown';
  pillEl.textContent = status ? 'orchestrator ' + status : 'no orchestrator';
  renderUptime();
}

function renderUptime() {
  const meta = $('#orch-meta');
  if (!orch || orch.status !== 'running') {
    meta.textContent = '';
    return;
  }
  const up = orch.started_at ? fmtAge(Date.now() - orch.started_at) : '?';
  meta.textContent = `pid ${orch.pid} on ${orch.hostname} · up ${up}`;
}

let inFlight = null;
let again = false;
async function refresh() {
  if (inFlight) {
    again = true;
    return inFlight;
  }
  inFlight = (async () => {
    try {
      await refreshOnce();
    } catch (e) {
      report(e);
    } finally {
      inFlight = null;
    }
    if (again) {
      again = false;
      refresh();
    }
  })();
  return inFlight;
}

async function refreshOnce() {
  const at = Date.now();
  const [o, w] = await Promise.allSettled([
    support.orchestrator ? getJson('/api/orchestrator') : Promise.resolve(null),
    getJson('/api/workers'),
  ]);
  if (o.status === 'fulfilled') {
    orch = o.value;
  } else {
    orch = null;
    if (o.reason.noRoute) support.orchestrator = false;
    else report(o.reason);
  }
  if (w.status === 'fulfilled') workers = w.value.workers || [];
  else report(w.reason);
  let counts = orch && orch.queue;
  let status = orch && orch.status;
  if (!counts || !orch) {
    const m = await fromMetrics();
    counts = m.counts;
    if (!orch) status = m.up ? 'running' : 'stopped';
  }
  renderHeader(status);
  pool.render({orch, workers, at, taskTitles: tasks.titles});
  tasks.renderCounts(counts);
  sampleDepth(counts);
  await tasks.refresh();
  // The pool's cards name tasks: give them the titles the list just read.
  pool.render({orch, workers, at, taskTitles: tasks.titles});
  if (detailDirty) {
    detailDirty = false;
    await detail.load();
  }
}

const schedule = debounce(refresh, 150, 600);

function onEvent(e) {
  if (e.task_id && e.task_id === detail.id) detailDirty = true;
  if (e.type === 'task.done' || e.type === 'task.failed') {
    countFinished(e);
    scheduleChart();
  }
  schedule();
}

// The chart: GET /api/stats, or (an older server) what this page has seen since it opened.
const local = {finished: new Map(), depth: []};
function countFinished(e) {
  const at = Date.parse(e.at) || Date.now();
  const b = Math.floor(at / BUCKET) * BUCKET;
  const v = local.finished.get(b) || {at: b, done: 0, failed: 0};
  v[e.type === 'task.done' ? 'done' : 'failed']++;
  local.finished.set(b, v);
}
function sampleDepth(counts) {
  const now = Date.now();
  const last = local.depth[local.depth.length - 1];
  const sample = {at: now, ready: counts.ready || 0, running: counts.running || 0, blocked: counts.blocked || 0, review: counts.review || 0};
  if (last && now - last.at < 5000) local.depth[local.depth.length - 1] = Object.assign(sample, {at: last.at});
  else local.depth.push(sample);
  while (local.depth.length && local.depth[0].at < now - HOUR) local.depth.shift();
}
function localStats() {
  const to = Date.now();
  return {bucket_ms: BUCKET, from: to - HOUR, to, throughput: [...local.finished.values()], depth: local.depth};
}

let lastStats = null;
async function refreshChart() {
  let stats = null;
  if (support.stats) {
    try {
      stats = await getJson('/api/stats');
    } catch (e) {
      if (e.noRoute) support.stats = false;
      else report(e);
    }
  }
  lastStats = stats || localStats();
  drawChart($('#chart'), lastStats);
}
const scheduleChart = debounce(refreshChart, 1000, 3000);
new ResizeObserver(() => lastStats && drawChart($('#chart'), lastStats)).observe($('#chart'));
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => lastStats && drawChart($('#chart'), lastStats));

// Worker actions and scaling.
async function workerAction(action, id, button) {
  const routes = {
    pause: ['POST', `/api/workers/${seg(id)}/pause`, 'Paused'],
    resume: ['POST', `/api/workers/${seg(id)}/resume`, 'Resumed'],
    stop: ['DELETE', `/api/workers/${seg(id)}`, 'Stopping'],
  };
  const [method, path, done] = routes[action];
  button.disabled = true;
  try {
    await send(method, path);
    toast(`${done} ${id}`);
  } catch (e) {
    toast(`Could not ${action} ${id}: ` + (e.noRoute ? 'this tx server cannot do that yet' : e.message), 'error');
  } finally {
    button.disabled = false;
    schedule();
  }
}

$('#scale-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const input = $('#scale-n');
  const button = $('#scale-button');
  const n = Number(input.value);
  button.disabled = true;
  button.textContent = 'Scaling…';
  try {
    const r = await send('POST', '/api/orchestrator/scale', {workers: n});
    toast(`The pool runs ${r.workers ?? n} workers`);
  } catch (e) {
    toast('Could not scale the pool: ' + (e.noRoute ? 'this tx server cannot do that yet' : e.message), 'error');
  } finally {
    button.textContent = 'Scale';
    button.disabled = false;
    delete input.dataset.dirty;
    schedule();
  }
});

// The token: a dialog from the bar, and a banner when the server answers 401.
function renderTokenButton() {
  $('#token-button').textContent = token() ? 'Token ✓' : 'Token';
}
$('#token-button').addEventListener('click', () => {
  $('#token-input').value = '';
  $('#token-dialog').showModal();
});
$('#token-dialog').addEventListener('close', () => {
  const v = $('#token-dialog').returnValue;
  if (v === 'save' && $('#token-input').value.trim()) setToken($('#token-input').value);
  if (v === 'clear') setToken('');
});
window.addEventListener('tx:unauthorized', (e) => {
  if (!$('#auth-banner').hidden) return;
  $('#auth-banner').hidden = false;
  toast('The server wants the API token: ' + e.detail, 'error');
});
$('#auth-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const v = $('#auth-token').value.trim();
  if (!v) return;
  setToken(v);
  $('#auth-token').value = '';
  $('#auth-banner').hidden = true;
  toast('Token saved: try again');
});
$('#auth-dismiss').addEventListener('click', () => { $('#auth-banner').hidden = true; });
window.addEventListener('tx:token', () => {
  renderTokenButton();
  schedule();
});

// Go.
renderTokenButton();
if (matchMedia('(min-width: 761px)').matches) $('#workers-details').open = true;
refresh();
refreshChart();
getJson('/api/sessions').catch((e) => e.noRoute && detail.noSessions());
events.connect();
// A task's address (/#task-…) opens it.
function selectFromHash() {
  if (/^#task-/.test(location.hash) && location.hash.slice(1) !== detail.id) selectTask(location.hash.slice(1));
}
window.addEventListener('hashchange', selectFromHash);
selectFromHash();
setInterval(() => {
  pool.tick();
  renderUptime();
}, 1000);
setInterval(() => {
  refresh();
  if (detail.id) detail.load().catch(() => {});
}, 5000);
setInterval(refreshChart, 15000);

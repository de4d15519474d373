// The dashboard's entry point: wires the panels to the API. Every event from the stream refreshes
// the pool, the queue and the open task after a short quiet time (150 ms); a 5 s poll is the
// fallback when the stream is down, and heartbeat ages tick every second in between.
// Routes an older server lacks (404 "no route") hide what needs them instead of failing.

import {adoptTokenFromUrl, getJson, getText, send, seg, setToken, token} from './api.js';
import {$, debounce, dollars, el, fmtAge, toast} from './dom.js';
import {drawChart} from './chart.js';
import {createDetail} from './detail.js';
import {createEvents} from './events.js';
import {createPool} from './pool.js';
import {createTasks} from './tasks.js';
import {createWorkerView} from './worker.js';

const HOUR = 3600 * 1000;
const BUCKET = 60 * 1000;

adoptTokenFromUrl();

const support = {orchestrator: true, stats: true, usage: true, notifications: true};
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
const workerView = createWorkerView({selectTask});

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
  renderAgents(orch && orch.agents);
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
  if (workerView.id) await workerView.load();
}

const schedule = debounce(refresh, 150, 600);

function onEvent(e) {
  if (e.task_id && e.task_id === detail.id) detailDirty = true;
  if (e.type === 'task.done' || e.type === 'task.failed' || e.type === 'task.review' ||
      e.type === 'agent.limited' || e.type === 'task.requeued') {
    scheduleCost();
  }
  if (e.type === 'notify.failed') scheduleNotifications();
  if (e.type === 'task.done' || e.type === 'task.failed') {
    countFinished(e);
    scheduleChart();
  }
  schedule();
}

// What keeps agents from starting: the limits in force ("claude limited until 14:05") and a
// daily budget reached, from GET /api/orchestrator's "agents".
function renderAgents(agents) {
  const box = $('#agents-banner');
  const lines = [];
  for (const l of (agents && agents.limits) || []) {
    const until = new Date(l.until);
    const hhmm = until.toISOString().slice(11, 16);
    lines.push(`${l.agent}${l.account ? ' (' + l.account + ')' : ''} limited until ${hhmm} UTC` +
               ` (in ${fmtAge(until - Date.now())})` + (l.reason ? ' — ' + l.reason : ''));
  }
  const b = agents && agents.budget;
  if (b && b.reached) {
    lines.push(`daily agent budget reached: ${dollars(b.spent_usd)} of ${dollars(b.daily_usd)};` +
               ` agents start again at ${b.next_day_at}`);
  }
  for (const q of (b && b.reached_queues) || []) lines.push(`daily budget of queue ${q} reached`);
  box.hidden = !lines.length;
  box.replaceChildren(...lines.map((t) => el('div', {class: 'agent-line'}, t)));
}

// Notifications that could not be delivered within their 24 hours: GET /api/notifications.
async function refreshNotifications() {
  if (!support.notifications) return;
  let failed;
  try {
    failed = await getJson('/api/notifications?status=failed&limit=20');
  } catch (e) {
    if (e.noRoute) support.notifications = false;
    else report(e);
    return;
  }
  const box = $('#notify-banner');
  box.hidden = !failed.length;
  const head = `${failed.length}${failed.length === 20 ? '+' : ''} notification` +
               `${failed.length === 1 ? '' : 's'} could not be delivered ` +
               '(tx notify list --status failed):';
  box.replaceChildren(el('div', {class: 'agent-line'}, head), ...failed.slice(0, 5).map((d) =>
    el('div', {class: 'agent-line notify-failed', dataset: {delivery: d.id}},
       `${d.event_type}${d.task_id ? ' ' + d.task_id : ''} → ${d.sink}: ${d.last_error}`)));
}
const scheduleNotifications = debounce(refreshNotifications, 1000, 5000);

// The agents' cost per day over the last week: GET /api/usage?by=day.
async function refreshCost() {
  if (!support.usage) return;
  let doc;
  try {
    doc = await getJson('/api/usage?by=day&since=7d');
  } catch (e) {
    if (e.noRoute) support.usage = false;
    else report(e);
    return;
  }
  const days = doc.groups || [];
  $('#cost').hidden = !days.length;
  $('#cost-total').textContent = days.length ? dollars(doc.total.cost_usd) + ' this week' : '';
  const most = Math.max(...days.map((d) => d.cost_usd), 1e-9);
  $('#cost-days').replaceChildren(...days.map((d) => {
    const bar = el('span', {class: 'bar'});
    bar.style.width = `${Math.max(2, 100 * d.cost_usd / most)}%`;  // CSSOM: the page's CSP allows it
    return el('li', {dataset: {day: d.key}}, el('span', {class: 'day'}, d.key.slice(5)), bar,
              el('span', {class: 'usd'}, dollars(d.cost_usd) + (d.cost_estimated ? '~' : '')));
  }));
}
const scheduleCost = debounce(refreshCost, 2000, 10000);

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

// The chart's span: the last hour, day or week (GET /api/stats?range=); an older server knows
// only the hour, and the buttons go.
const RANGE_TITLES = {'1h': 'Last hour', '24h': 'Last 24 hours', '7d': 'Last 7 days'};
let chartRange = '1h';
function perBucket(ms) {
  const m = Math.round(ms / 60000);
  return m === 1 ? 'min' : m < 60 ? m + ' min' : m / 60 + ' h';
}

let lastStats = null;
async function refreshChart() {
  let stats = null;
  const range = chartRange;
  if (support.stats) {
    try {
      stats = await getJson('/api/stats' + (range === '1h' ? '' : '?range=' + range));
    } catch (e) {
      if (e.noRoute) support.stats = false;
      else if (e.status === 400 && /range/.test(e.message)) {
        $('#chart-range').hidden = true;
        setRange('1h');
        return;
      } else report(e);
    }
  }
  if (range !== chartRange) return;  // another span was asked for meanwhile
  $('#chart-range').hidden = !support.stats;
  lastStats = stats || localStats();
  const title = RANGE_TITLES[lastStats.range || '1h'];
  $('#chart-title').textContent = title;
  $('#chart').setAttribute('aria-label', 'throughput and queue depth: ' + title.toLowerCase());
  $('#key-done').textContent = 'done/' + perBucket(lastStats.bucket_ms);
  $('#key-failed').textContent = 'failed/' + perBucket(lastStats.bucket_ms);
  drawChart($('#chart'), lastStats);
}
function setRange(range) {
  chartRange = range;
  for (const b of $('#chart-range').querySelectorAll('button[data-range]')) b.classList.toggle('selected', b.dataset.range === range);
  refreshChart();
}
$('#chart-range').addEventListener('click', (ev) => {
  const b = ev.target.closest('button[data-range]');
  if (b && b.dataset.range !== chartRange) setRange(b.dataset.range);
});
const scheduleChart = debounce(refreshChart, 1000, 3000);
new ResizeObserver(() => lastStats && drawChart($('#chart'), lastStats)).observe($('#chart'));
$('#chart').addEventListener('contextrestored', () => lastStats && drawChart($('#chart'), lastStats));
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => lastStats && drawChart($('#chart'), lastStats));

// A worker's name anywhere on the page opens its history of attempts.
document.addEventListener('click', (ev) => {
  const a = ev.target.closest('a[data-worker]');
  if (!a) return;
  ev.preventDefault();
  workerView.open(a.dataset.worker);
});

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
refreshCost();
refreshNotifications();
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
setInterval(refreshCost, 60000);

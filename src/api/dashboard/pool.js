// The pool panel: one card per slot of the orchestrator (worker, status, task, heartbeat age that
// ticks, restarts, CPU, RSS, pause/resume/stop), the scale control, and the table of every worker.
// Without GET /api/orchestrator (an older server) the slots are read from the workers' own rows.

import {$, armed, el, fmtAge, patchList, pill, toMs} from './dom.js';

const LIVE = new Set(['starting', 'idle', 'busy', 'paused', 'stopping']);
const RECENT_MS = 30 * 60 * 1000;  // dead and stopped workers stay in the table this long
const MAX_ROWS = 40;
const REPLACED_MS = 10 * 60 * 1000;  // a slot's card names the worker it replaced this long

// "1s", "500ms", "2m" → ms
function durationMs(text) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text || '');
  if (!m) return null;
  return Number(m[1]) * {ms: 1, s: 1000, m: 60000, h: 3600000}[m[2]];
}

// A worker's heartbeat age: the server's reading when it sends one, else from its last heartbeat
// by this browser's clock.
function ageOf(w) {
  if (!w) return null;
  if (w.heartbeat_age_ms !== undefined) return w.heartbeat_age_ms;
  const last = toMs(w.last_heartbeat_at);
  return last === null ? null : Math.max(0, Date.now() - last);
}

// The newest registration of each slot, shaped like the orchestrator's slots.
function slotsFromWorkers(workers) {
  const seen = new Map();
  for (const w of workers) {
    if (!w.slot || seen.has(w.slot)) continue;
    seen.set(w.slot, {
      slot: w.slot,
      state: LIVE.has(w.status) ? 'running' : w.status,
      pid: w.pid,
      worker_id: w.id,
      worker_status: w.status,
      task_id: w.current_task_id,
      heartbeat_age_ms: ageOf(w),
      restarts: w.metadata && w.metadata.restart_count,
    });
  }
  return [...seen.values()].filter((s) => LIVE.has(s.worker_status))
      .sort((a, b) => a.slot.localeCompare(b.slot, undefined, {numeric: true}));
}

export function createPool({selectTask, act}) {
  const slotsBox = $('#slots');
  const tbody = $('#workers-table tbody');
  const replaced = new Map();  // slot → {id, at}: the worker a slot had before its current one
  const lastWorker = new Map();  // slot → worker id at the previous render
  let lastSeen = {orch: null, workers: [], at: 0};

  function heartbeatCell(ageMs, at, late, tag = 'dd', extra = '') {
    return el(tag, {class: 'hb' + (late ? ' late' : '') + extra, dataset: {hbBase: ageMs ?? '', hbAt: at}},
              ageMs === null || ageMs === undefined ? '–' : fmtAge(ageMs));
  }

  // Pause or resume, and (in the table, not on the cards) stop.
  function actionButtons(w, small, stop = true) {
    if (!w || !LIVE.has(w.status) || w.status === 'stopping') return [];
    const cls = small ? 'small' : '';
    const out = [];
    if (w.status === 'paused') {
      out.push(el('button', {type: 'button', class: cls, dataset: {act: 'resume', worker: w.id}}, 'Resume'));
    } else if (w.status === 'idle' || w.status === 'busy') {
      out.push(el('button', {type: 'button', class: cls, dataset: {act: 'pause', worker: w.id}}, 'Pause'));
    }
    if (stop) out.push(el('button', {type: 'button', class: cls + ' danger', dataset: {act: 'stop', worker: w.id}}, 'Stop'));
    return out;
  }

  function taskLink(id) {
    return el('a', {dataset: {task: id}, href: '#' + id}, id);
  }

  function slotCard(s, w, at) {
    const status = s.state === 'running' ? (s.worker_status || (w && w.status) || 'starting') : s.state;
    const ageMs = s.heartbeat_age_ms ?? ageOf(w);
    const interval = w && durationMs(w.heartbeat_interval);
    const late = !!(w && (w.stale || (interval && ageMs > 2 * interval)));
    const md = (w && w.metadata) || {};
    const taskId = s.task_id || (w && w.current_task_id);
    const prev = replaced.get(s.slot) && Date.now() - replaced.get(s.slot).at < REPLACED_MS ? replaced.get(s.slot) : null;
    const prevWorker = prev && lastSeen.byId.get(prev.id);
    const view = {
      status, worker: s.worker_id, pid: s.pid, taskId, title: titles.get(taskId), restarts: s.restarts, late,
      cpu: md.cpu_percent, rss: md.rss_mb, failure: s.failure, exit: s.last_exit,
      prev: prev && [prev.id, prevWorker && prevWorker.status, prevWorker && prevWorker.reason],
      acts: actionButtons(w, true, false).map((b) => b.dataset.act).join(),
    };
    return {view, build: () => [
      el('div', {class: 'slot-head'}, el('span', {class: 'slot-name'}, s.slot), pill(status),
         el('span', {class: 'spacer'}), actionButtons(w, true, false)),
      el('div', {class: 'line mono'}, s.worker_id ? el('a', {class: 'worker-link', dataset: {worker: s.worker_id}, href: '#', title: 'its attempts'}, el('strong', {}, s.worker_id)) : 'no worker',
         s.pid ? ' · pid ' + s.pid : ''),
      el('div', {class: 'line task-line'}, taskId ? ['task ', taskLink(taskId), titleOf(taskId)] : 'no task'),
      el('dl', {class: 'stats'},
         el('div', {}, el('dt', {}, 'heartbeat'), heartbeatCell(ageMs, s.heartbeat_age_ms === undefined ? Date.now() : at, late)),
         el('div', {}, el('dt', {}, 'restarts'), el('dd', {}, String(s.restarts ?? 0))),
         el('div', {}, el('dt', {}, 'CPU'), el('dd', {}, md.cpu_percent === undefined ? '–' : md.cpu_percent.toFixed(1) + ' %')),
         el('div', {}, el('dt', {}, 'RSS'), el('dd', {}, md.rss_mb === undefined ? '–' : Math.round(md.rss_mb) + ' MB'))),
      s.failure ? el('div', {class: 'failure'}, s.failure) : null,
      prev ? el('div', {class: 'replaced', dataset: {oldWorker: prev.id, oldStatus: (prevWorker && prevWorker.status) || ''},
                        title: (prevWorker && prevWorker.reason) || ''},
                '↻ replaced ' + prev.id + ' · ' + ((prevWorker && prevWorker.status) || 'gone') +
                    (prevWorker && prevWorker.reason ? ' · ' + prevWorker.reason : '')) : null,
    ]};
  }

  let titles = new Map();
  function titleOf(id) {
    const t = titles.get(id);
    return t ? el('span', {class: 'muted'}, ' ' + t) : null;
  }

  function render({orch, workers, at, taskTitles}) {
    titles = taskTitles || titles;
    const byId = new Map(workers.map((w) => [w.id, w]));
    lastSeen = {orch, workers, at, byId};
    const running = orch && orch.status === 'running';
    const slots = orch ? (orch.slots || []) : slotsFromWorkers(workers);
    for (const s of slots) {
      const before = lastWorker.get(s.slot);
      if (before && s.worker_id && before !== s.worker_id) replaced.set(s.slot, {id: before, at: Date.now()});
      if (s.worker_id) lastWorker.set(s.slot, s.worker_id);
    }
    patchList(slotsBox, slots, (s) => {
      const w = byId.get(s.worker_id);
      const {view, build} = slotCard(s, w, at);
      const status = view.status;
      const heartbeat = {age: s.heartbeat_age_ms ?? ageOf(w), at: s.heartbeat_age_ms === undefined ? Date.now() : at};
      return {key: s.slot, view, build, heartbeat, attrs: () => el('article', {class: 'slot', dataset: {
        key: s.slot, slot: s.slot, status, workerId: s.worker_id || '', state: s.state || ''}})};
    });
    if (!slots.length) {
      const why = !orch ? 'No supervised workers.' : running ? 'The pool has no workers: scale it up.'
          : 'No orchestrator is running: start one with tx orchestrator start.';
      slotsBox.replaceChildren(el('p', {class: 'empty'}, why));
    }
    const sub = $('#pool-sub');
    if (orch) {
      const live = slots.filter((s) => s.state === 'running').length;
      sub.textContent = `${live} of ${orch.desired ?? slots.length} running · max ${orch.max_workers ?? '?'}`;
    } else {
      sub.textContent = `${slots.length} slots`;
    }
    const scaleInput = $('#scale-n');
    if (orch && document.activeElement !== scaleInput && !scaleInput.dataset.dirty) {
      scaleInput.value = orch.desired ?? slots.length;
    }
    if (orch && orch.max_workers) scaleInput.max = orch.max_workers;
    $('#scale-form').hidden = !orch;
    $('#scale-button').disabled = !running;

    const now = Date.now();
    // Live workers first, then the ones that ended lately, newest first.
    const rows = workers.filter((w) => LIVE.has(w.status))
        .concat(workers.filter((w) => !LIVE.has(w.status) && now - (toMs(w.last_heartbeat_at) || 0) < RECENT_MS))
        .slice(0, MAX_ROWS);
    $('#workers-count').textContent = `(${workers.filter((w) => LIVE.has(w.status)).length} live, ${workers.length} known)`;
    patchList(tbody, rows, (w) => {
      const view = [w.status, w.current_task_id, w.stale, w.reason, actionButtons(w).length];
      return {key: w.id, view, heartbeat: {age: ageOf(w), at: Date.now()}, attrs: () => el('tr', {dataset: {key: w.id, workerId: w.id, status: w.status}}),
        build: () => [
          el('td', {title: w.reason || ''}, el('a', {dataset: {worker: w.id}, href: '#', title: 'its attempts'}, w.name || w.id), el('div', {class: 'task-id'}, w.id)),
          el('td', {}, pill(w.status)),
          w.status === 'stopped' ? el('td', {class: 'hide-sm muted'}, '–')
                                 : heartbeatCell(ageOf(w), Date.now(), w.stale && LIVE.has(w.status), 'td', ' hide-sm'),
          el('td', {class: 'hide-sm'}, w.current_task_id ? taskLink(w.current_task_id) : '–'),
          el('td', {}, actionButtons(w, true)),
        ]};
    });
  }

  // The heartbeat ages count up between fetches.
  function tick() {
    const now = Date.now();
    for (const n of document.querySelectorAll('[data-hb-base]')) {
      if (n.dataset.hbBase === '') continue;
      n.textContent = fmtAge(Number(n.dataset.hbBase) + now - Number(n.dataset.hbAt));
    }
  }

  // Clicks: a task link selects it; worker buttons act (stop asks twice).
  for (const box of [slotsBox, tbody]) {
    box.addEventListener('click', (ev) => {
      const link = ev.target.closest('a[data-task]');
      if (link) {
        ev.preventDefault();
        selectTask(link.dataset.task);
        return;
      }
      const b = ev.target.closest('button[data-act]');
      if (!b) return;
      if (b.dataset.act === 'stop' && !armed(b)) return;
      act(b.dataset.act, b.dataset.worker, b);
    });
  }
  $('#scale-n').addEventListener('input', (e) => { e.target.dataset.dirty = '1'; });

  return {render, tick};
}

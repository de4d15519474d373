// The selected task: its fields, its attempts, the actions its status allows (cancel, retry,
// approve, request changes, merge, kill the agent, answer its agent's question), its git branch
// (commits and diff against the base) and a live tail of an attempt's log.

import {$, armed, dollars, el, fmtAge, stamp, toMs, toast} from './dom.js';
import {ApiError, getJson, request, send, seg} from './api.js';

const LOG_TAIL = 32 * 1024;  // bytes asked for when a log is opened
const LOG_KEEP = 256 * 1024;  // characters kept on screen
const LOG_POLL_MS = 1000;  // how often the tail is read while the followed stream is silent
const CANCELLABLE = new Set(['ready', 'blocked', 'running', 'waiting', 'review', 'approved']);
const RETRYABLE = new Set(['failed', 'cancelled']);
const DIFF_KEEP = 400 * 1024;  // characters of a diff shown; the rest is left to tx task diff

// Whether the reconciler marked the task as waiting in review past the review timeout.
export function reviewOverdue(t) {
  return t.status === 'review' && !!(t.metadata && t.metadata.review_overdue_at);
}

// The questions its agents asked (tx task ask), oldest first: {question, answer?, asked_at, ...}.
function questionsOf(t) {
  const q = t.metadata && t.metadata.questions;
  return Array.isArray(q) ? q.filter((e) => e && typeof e.question === 'string') : [];
}

export function createDetail({changed, onSelect}) {
  let task = null;  // the task as last read
  let id = null;
  let pinned = null;  // an attempt number the user picked, else the latest is followed
  let log = {key: '', ctrl: null, ended: false, missing: false};
  let sessionsSupported = true;
  let branchKey = '';  // the task state the branch view was read for
  let questionKey = '';  // the question the answer box is for: a new one starts it empty

  const body = $('#detail-body');
  const logBox = $('#log');
  const logState = $('#log-state');

  function field(name, value, cls) {
    if (value === undefined || value === null || value === '' || (Array.isArray(value) && !value.length)) return [];
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    if (!name) return [el('dd', {class: 'wide muted'}, text)];
    return [el('dt', {}, name), el('dd', {class: cls || ''}, text)];
  }

  function render() {
    const t = task;
    $('#detail-empty').hidden = !!t;
    body.hidden = !t;
    $('#detail-close').hidden = !t;
    $('#detail-id').textContent = t ? t.id : '';
    if (!t) return;
    body.dataset.taskId = t.id;
    body.dataset.status = t.status;
    const st = $('#detail-status');
    st.dataset.status = t.status;
    st.textContent = t.status;
    $('#detail-title').textContent = t.title || '(untitled)';
    $('#detail-overdue').hidden = !reviewOverdue(t);
    const command = Array.isArray(t.command) ? t.command.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ') : t.command;
    const facts = [`attempt ${t.attempt} of ${t.max_attempts}`, `priority ${t.priority}`, `queue ${t.queue}`,
                   `timeout ${t.timeout}`].concat(t.review ? ['review'] : []).join(' · ');
    const times = [['created', t.created_at], ['started', t.started_at], ['finished', t.finished_at]]
        .filter(([, v]) => v).map(([k, v]) => k + ' ' + stamp(v)).join(' · ');
    // What its agents cost (the usage ledger), and against what budget.
    const u = t.usage;
    const budget = t.metadata && typeof t.metadata.budget_usd === 'number' ? t.metadata.budget_usd : 0;
    const cost = u ? dollars(u.cost_usd) + (u.cost_estimated ? ' (estimated)' : '') +
        (budget ? ' of a ' + dollars(budget) + ' budget' : '') +
        ` · ${u.tokens.input} in, ${u.tokens.output} out · ${u.turns} turn${u.turns === 1 ? '' : 's'}`
        : (budget ? 'budget ' + dollars(budget) : '');
    const denials = (t.attempts || []).flatMap((a) => (a.usage && a.usage.permission_denials || [])
        .map((d) => `attempt ${a.n}: ${d.tool}${d.input ? '(' + d.input + ')' : ''}`));
    const questions = questionsOf(t);
    const last = questions[questions.length - 1];
    const open = t.status === 'waiting' && last && typeof last.answer !== 'string' ? last : null;
    const answered = questions.filter((q) => typeof q.answer === 'string')
        .flatMap((q) => field('asked', q.question + ' → ' + q.answer));
    $('#detail-fields').replaceChildren(
        ...field('', facts),
        ...field('', times),
        ...field('waits', t.unclaimable ? 'no worker can claim it now: ' + t.unclaimable : '', 'unclaimable'),
        ...field('cost', cost),
        ...field('result', t.result),
        ...field('error', t.error, 'error'),
        ...field('denied', denials, 'error'),
        ...answered);
    const box = $('#question');
    box.hidden = !open;
    box.dataset.taskId = t.id;
    const key = open ? t.id + '#' + questions.length : '';
    if (key !== questionKey) {
      questionKey = key;
      $('#answer-input').value = '';
    }
    if (open) $('#question-text').textContent = open.question;
    $('#detail-more').replaceChildren(
        ...field('repository', t.repo ? t.repo + (t.base ? ' (base ' + t.base + ')' : '') : '', 'mono'),
        ...field('auto-merge', t.metadata && t.metadata.auto_merge === true ? 'on a green check' : ''),
        ...field('command', command, 'mono'),
        ...field('agent', t.agent),
        ...field('owner', t.owner),
        ...field('requires', t.requires),
        ...field('after', t.after),
        ...field('description', t.description));
    const active = activeAttempt();
    const show = {
      cancel: CANCELLABLE.has(t.status),
      retry: RETRYABLE.has(t.status),
      approve: t.status === 'review',
      changes: t.status === 'review',
      merge: t.status === 'approved' && !!t.repo,
      kill: t.status === 'running' && !!active && sessionsSupported,
    };
    for (const b of $('#detail-actions').querySelectorAll('button[data-act]')) b.hidden = !show[b.dataset.act];
    $('#detail-note').hidden = !Object.values(show).some(Boolean);

    const attempts = t.attempts || [];
    const shown = shownAttempt();
    $('#attempts-table tbody').replaceChildren(...attempts.slice().reverse().map((a) => {
      const started = toMs(a.started_at);
      const ended = toMs(a.ended_at);
      const took = started ? fmtAge((ended || Date.now()) - started) : '–';
      const end = a.end_reason ? a.end_reason + (a.exit_code !== null && a.exit_code !== undefined ? ' (' + a.exit_code + ')' : '') : a.status;
      const spent = a.usage ? dollars(a.usage.cost_usd) + (a.usage.cost_estimated ? '~' : '') : '–';
      return el('tr', {class: a.n === shown ? 'selected' : '', dataset: {attempt: a.n, status: a.status}, title: 'show this attempt\'s log'},
                el('td', {}, String(a.n)), el('td', {class: 'mono'}, a.worker_id ? el('a', {dataset: {worker: a.worker_id}, href: '#', title: 'its attempts'}, a.worker_id) : '–'),
                el('td', {class: 'hide-sm'}, stamp(a.started_at)), el('td', {}, took), el('td', {}, end || '–'),
                el('td', {class: 'cost'}, spent));
    }));
    if (!attempts.length) {
      $('#attempts-table tbody').replaceChildren(el('tr', {}, el('td', {colspan: 6, class: 'muted'}, 'not run yet')));
    }
  }

  // The branch of a task that names a repository: read again when the task's state changes (a new
  // attempt, review, approval, merge), not on every refresh, since it runs git on the server.
  function syncBranch() {
    const t = task;
    const box = $('#branch');
    if (!t || !t.repo) {
      box.hidden = true;
      branchKey = '';
      return;
    }
    const key = [t.id, t.status, (t.attempts || []).length, t.updated_at].join('|');
    if (key === branchKey) return;
    branchKey = key;
    box.hidden = false;
    box.dataset.taskId = t.id;
    loadBranch(t, key);
  }

  async function loadBranch(t, key) {
    const diff = $('#branch-diff');
    let b = null;
    let missing = '';
    try {
      b = await getJson('/api/tasks/' + seg(t.id) + '/diff');
    } catch (e) {
      if (branchKey !== key) return;
      // No branch: not made yet, or merged and deleted. The summary stored at review still says
      // what it held.
      missing = e.status === 404 ? 'no branch' + (t.status === 'done' ? ' (merged)' : ' yet') : e.message;
      const kept = t.metadata && t.metadata.branch;
      b = kept && Array.isArray(kept.commits) ? Object.assign({}, kept, {diff: ''}) : null;
    }
    if (branchKey !== key) return;
    const box = $('#branch');
    box.dataset.state = missing ? 'missing' : 'shown';
    $('#branch-name').textContent = b ? b.branch + ' → ' + b.base : '';
    const n = b ? b.commits.length : 0;
    $('#branch-summary').textContent = b
      ? `· ${n} commit${n === 1 ? '' : 's'}, ${b.files_changed} file${b.files_changed === 1 ? '' : 's'} changed, +${b.insertions} -${b.deletions}` +
        (missing ? ' · at review; ' + missing : '')
      : '· ' + missing;
    $('#branch-commits').replaceChildren(...(b ? b.commits : []).map((c) =>
        el('li', {}, el('span', {class: 'sha'}, c.sha.slice(0, 10)), c.subject)));
    showDiff(diff, b && b.diff ? b.diff : '');
    $('#branch-diff-box').hidden = !(b && b.diff);
    if (missing && !/^no branch/.test(missing)) branchKey = '';  // a failure: read again at the next refresh
  }

  // The diff, a line at a time, coloured by what each line is.
  function showDiff(pre, text) {
    const cut = text.length > DIFF_KEEP;
    const lines = (cut ? text.slice(0, DIFF_KEEP) : text).split('\n');
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    const kind = (l) => (l.startsWith('diff --git') ? 'file'
      : l.startsWith('+++') || l.startsWith('---') ? 'file'
      : l.startsWith('@@') ? 'hunk'
      : l.startsWith('+') ? 'add'
      : l.startsWith('-') ? 'del' : '');
    const nodes = lines.map((l) => el('span', {class: kind(l)}, l + '\n'));
    if (cut) nodes.push(el('span', {class: 'hunk'}, '… cut here: tx task diff ' + (task ? task.id : '') + ' shows it all\n'));
    pre.replaceChildren(...nodes);
  }

  function activeAttempt() {
    return task && (task.attempts || []).find((a) => a.status === 'active');
  }

  function shownAttempt() {
    const attempts = (task && task.attempts) || [];
    if (pinned && attempts.some((a) => a.n === pinned)) return pinned;
    return attempts.length ? attempts[attempts.length - 1].n : null;
  }

  // Opens (or keeps) the log of the shown attempt: its tail, then what it writes until it ends.
  function syncLog() {
    const n = shownAttempt();
    const key = id && n ? id + '#' + n : '';
    if (key === log.key && !(log.ended && activeAttempt() && activeAttempt().n === n)) return;
    if (log.ctrl) log.ctrl.abort();
    logBox.textContent = '';
    log = {key, ctrl: null, ended: false, missing: false};
    if (!key) {
      logState.textContent = id ? '· no attempt yet' : '';
      return;
    }
    followLog(id, n, log);
  }

  // The log is followed with ?follow=true. Until that stream has delivered something, the tail is
  // also read every second: a server that compresses the stream (gzip buffers it) or a proxy that
  // buffers it still shows a live tail. Once the stream speaks, what it sent is the log.
  async function followLog(taskId, n, current) {
    const ctrl = new AbortController();
    current.ctrl = ctrl;
    const path = `/api/tasks/${seg(taskId)}/log?attempt=${n}&tail=${LOG_TAIL}`;
    let streamed = '';
    let streaming = false;
    let finished = false;
    logState.textContent = '· attempt ' + n + ' · following';
    logBox.dataset.state = 'following';
    const poll = async () => {
      while (!streaming && !finished && log === current) {
        await new Promise((r) => setTimeout(r, LOG_POLL_MS));
        if (streaming || finished || log !== current) return;
        try {
          const text = await (await request('GET', path, {signal: ctrl.signal})).text();
          if (!streaming && !finished && log === current) show(text);
        } catch (_) {
          // the stream's own outcome is reported below
        }
      }
    };
    poll();
    try {
      const res = await request('GET', path + '&follow=true', {signal: ctrl.signal});
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        streaming = true;
        streamed += decoder.decode(value, {stream: true});
        if (streamed.length > LOG_KEEP * 2) streamed = streamed.slice(-LOG_KEEP);
        if (log === current) show(streamed);
      }
      finished = true;
      if (log !== current) return;
      current.ended = true;
      logState.textContent = '· attempt ' + n + ' · ended';
      logBox.dataset.state = 'ended';
      if (!streamed) show('(no output)');
    } catch (e) {
      finished = true;
      if (e.name === 'AbortError' || log !== current) return;
      current.ended = true;
      current.missing = e instanceof ApiError && e.status === 404;
      logState.textContent = '· attempt ' + n + (current.missing ? ' · no output yet' : ' · ' + e.message);
      logBox.dataset.state = 'ended';
    }
  }

  // Shows `text` (the end of it), keeping the view at the bottom when it was there.
  function show(text) {
    const atBottom = logBox.scrollTop + logBox.clientHeight >= logBox.scrollHeight - 8;
    logBox.textContent = text.length > LOG_KEEP ? text.slice(-LOG_KEEP) : text;
    if (atBottom) logBox.scrollTop = logBox.scrollHeight;
  }

  async function load() {
    if (!id) return;
    const want = id;
    try {
      const t = await getJson('/api/tasks/' + seg(want));
      if (want !== id) return;
      task = t;
      render();
      syncBranch();
      syncLog();
    } catch (e) {
      if (want !== id) return;
      if (e.status === 404) {
        toast(e.message, 'error');
        select(null);
      }
      throw e;
    }
  }

  function select(newId) {
    if (newId === id) return load();
    id = newId;
    task = null;
    pinned = null;
    branchKey = '';
    $('#branch').hidden = true;
    if (log.ctrl) log.ctrl.abort();
    log = {key: '', ctrl: null, ended: false, missing: false};
    logBox.textContent = '';
    onSelect(id);
    render();
    return load().catch(() => {});
  }

  async function act(action) {
    if (!task) return;
    // A merge may take minutes (the check): by then another task may be shown.
    const tid = task.id;
    const note = $('#detail-note').value.trim();
    const withNote = (o) => (note ? Object.assign(o, {note}) : o);
    const path = '/api/tasks/' + seg(tid);
    try {
      if (action === 'cancel') await send('PATCH', path, withNote({status: 'cancelled'}));
      else if (action === 'retry') await send('PATCH', path, withNote({status: 'ready'}));
      else if (action === 'approve') await send('PATCH', path, withNote({status: 'approved'}));
      else if (action === 'changes') await send('PATCH', path, withNote({status: 'ready'}));
      else if (action === 'merge') await send('POST', path + '/merge', withNote({}));
      else if (action === 'kill') {
        const a = activeAttempt();
        if (!a) return;
        await send('DELETE', '/api/sessions/' + seg(a.token));
      }
      if (id === tid) $('#detail-note').value = '';
      const done = {cancel: 'Cancelled', retry: 'Queued again:', approve: 'Approved', changes: 'Changes requested for', merge: 'Merged', kill: 'Killed the agent of'};
      toast(done[action] + ' ' + tid);
    } catch (e) {
      if (action === 'kill' && e.noRoute) {
        sessionsSupported = false;
        render();
      }
      toast(`Could not ${action === 'changes' ? 'request changes on' : action} ${tid}: ${e.message}`, 'error');
    }
    changed();
    load().catch(() => {});
  }

  $('#detail-actions').addEventListener('click', (ev) => {
    const b = ev.target.closest('button[data-act]');
    if (!b) return;
    if ((b.dataset.act === 'cancel' || b.dataset.act === 'kill') && !armed(b)) return;
    // A merge runs the check, which may take minutes: one at a time from here.
    b.disabled = true;
    act(b.dataset.act).finally(() => {
      b.disabled = false;
    });
  });
  $('#attempts-table tbody').addEventListener('click', (ev) => {
    if (ev.target.closest('a[data-worker]')) return;  // opens the worker's history instead
    const tr = ev.target.closest('tr[data-attempt]');
    if (!tr) return;
    const attempts = task.attempts || [];
    const n = Number(tr.dataset.attempt);
    pinned = n === attempts[attempts.length - 1].n ? null : n;
    render();
    syncLog();
  });
  $('#detail-close').addEventListener('click', () => select(null));
  // The answer to a waiting task's question: back to the queue, its agent resumed with it.
  $('#question').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!task) return;
    const tid = task.id;
    const answer = $('#answer-input').value.trim();
    if (!answer) {
      toast('Write an answer first', 'error');
      return;
    }
    const button = $('#answer-send');
    button.disabled = true;
    try {
      await send('PATCH', '/api/tasks/' + seg(tid), {status: 'ready', answer});
      if (id === tid) $('#answer-input').value = '';
      toast('Answered ' + tid);
    } catch (e) {
      toast(`Could not answer ${tid}: ${e.message}`, 'error');
    } finally {
      button.disabled = false;
    }
    changed();
    load().catch(() => {});
  });

  return {
    select,
    // Without GET /api/sessions (an older server) there is no agent to kill from here.
    noSessions() {
      sessionsSupported = false;
      render();
    },
    load,
    get id() {
      return id;
    },
  };
}

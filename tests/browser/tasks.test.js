// Finding tasks among 5,000 on the dashboard (issue 24): the search, the filters, paging through
// every task, cancelling and retrying many at once, each task's cost, a worker's history and the
// chart over an hour, a day and a week; and the list answering in under 200 ms. One worker runs
// the tasks of the queue `default` (a quick one, a failing one and an agent's, which costs
// $0.42); the 5,000 wait in the queues bulk-a and bulk-b, which no worker takes, added through
// the API before the page opens.

import assert from 'node:assert/strict';
import {after, before, describe, test} from 'node:test';
import {fileURLToPath} from 'node:url';

import {Pool, launchBrowser, openDashboard, pageUntil, sleep, until} from './harness.js';

const STANDIN = fileURLToPath(new URL('../agents/standin/claude', import.meta.url));
const CONFIG = `[agents.standin]
adapter = "claude"
argv = ["${STANDIN}", "-p", "{prompt}", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash(tx:*)"]
`;
const BULK = 4990;  // and 10 more after a pause: the time filter's line
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'omega'];
const PAGE = 50;

// The bulk task i: its title carries a word (a fifth of the tasks each) and, for 8 of them,
// "needle"; it lies in bulk-a or bulk-b, every tenth is pinned to slot-9 and every seventh names
// the standin agent.
function bulkTask(i) {
  const body = {
    title: `bulk ${String(i).padStart(4, '0')} ${WORDS[i % WORDS.length]}${i % 700 === 3 ? ' needle' : ''}`,
    queue: i % 2 ? 'bulk-b' : 'bulk-a',
  };
  if (i % 10 === 0) body.owner = 'slot-9';
  if (i % 7 === 0) body.agent = 'standin';
  else body.command = ['true'];
  return body;
}

describe('finding tasks among 5,000', () => {
  let pool;
  let browser;
  let page;
  let late;  // the time (ISO) after which only the last 10 were created
  const done = {};  // the tasks the worker ran: quick, failing, agent

  // Every task the API lists for `query`, newest first, a thousand a page.
  async function all(query) {
    const out = [];
    let cursor = '';
    for (;;) {
      const r = await pool.api('GET', `/api/tasks?order=desc&limit=1000&${query}${cursor ? '&cursor=' + cursor : ''}`);
      out.push(...r.tasks.map((t) => t.id));
      if (!r.next_cursor) return out;
      cursor = r.next_cursor;
    }
  }
  // The first page the dashboard should show for `query`.
  async function firstPage(query) {
    return (await pool.api('GET', `/api/tasks?order=desc&limit=${PAGE}&${query}`)).tasks.map((t) => t.id);
  }
  const shownIds = () => page.$$eval('#task-table tbody tr', (trs) => trs.map((t) => t.dataset.taskId));
  // Waits until the list shows exactly `ids`, in order.
  async function showing(ids, what, ms = 10000) {
    try {
      await pageUntil(page, (want) => {
        const got = [...document.querySelectorAll('#task-table tbody tr')].map((t) => t.dataset.taskId);
        return got.length === want.length && got.every((id, i) => id === want[i]);
      }, ids, ms);
    } catch (e) {
      const got = await shownIds();
      assert.fail(`${what}: the list shows ${got.length} tasks (${got.slice(0, 3).join(', ')}…), not the ${ids.length} expected (${ids.slice(0, 3).join(', ')}…)`);
    }
  }
  async function search(text) {
    await page.fill('#task-search', text);
    await page.press('#task-search', 'Enter');
  }
  async function openFilters() {
    if (!(await page.locator('#filters').evaluate((d) => d.open))) await page.click('#filters summary');
  }
  async function clearFilters() {
    await page.fill('#task-search', '');
    await openFilters();
    await page.click('#filter-form button[type=reset]');
    await page.click('#status-tabs button[data-filter=""]');
  }

  before(async () => {
    pool = await Pool.start({workers: 1, config: CONFIG});
    const started = Date.now();
    await pool.addTasks(Array.from({length: BULK}, (_, i) => bulkTask(i)));
    // Past a whole second, so that a datetime-local field (seconds) can name the line exactly.
    late = new Date(Math.ceil((Date.now() + 1) / 1000) * 1000).toISOString();
    while (Date.now() <= Date.parse(late) + 50) await sleep(20);
    await pool.addTasks(Array.from({length: 10}, (_, i) => ({title: `late arrival ${i}`, command: ['true'], queue: 'bulk-a'})));
    console.log(`# added ${BULK + 10} tasks through the API in ${Date.now() - started} ms`);
    // The worker's own: each ends in a state of its own.
    done.quick = (await pool.addTask('quick one', ['true'])).id;
    done.failing = (await pool.addTask('failing one', ['sh', '-c', 'exit 3'], {max_attempts: 1})).id;
    done.agent = (await pool.api('POST', '/api/tasks', {title: 'an agent at work', agent: 'standin',
      instructions: 'standin: report=done cost=0.42'})).id;
    await until('the worker to finish its three tasks', async () => {
      const s = await Promise.all(Object.values(done).map((id) => pool.json('task', 'show', id)));
      return s.every((t) => t.status === 'done' || t.status === 'failed') && s.find((t) => t.id === done.agent).usage;
    }, 30000);
    browser = await launchBrowser();
    page = await openDashboard(browser, pool, {token: pool.token});
    await pageUntil(page, () => document.querySelectorAll('#task-table tbody tr').length > 0, null, 15000);
  });

  after(async () => {
    if (page && page.problems.length) console.log('page problems:\n' + page.problems.join('\n'));
    await browser?.close();
    await pool?.stop();
  });

  test('the list answers in under 200 ms over 5,003 tasks (the median of 9 of each request)', async () => {
    const deep = (await pool.api('GET', '/api/tasks?order=desc&limit=1000')).next_cursor;
    const queries = {
      'the first page': '',
      'a search (every row read)': '&q=needle',
      'an id\'s prefix': '&q=' + done.quick.slice(0, 8),
      'a status, a queue and an agent': '&status=ready&queue=bulk-b&agent=standin',
      'a created time': '&since=' + encodeURIComponent(late),
      'a page deep down': '&cursor=' + deep,
    };
    const medians = await page.evaluate(async ([queries, token, page]) => {
      const out = {};
      for (const [name, q] of Object.entries(queries)) {
        const times = [];
        for (let i = 0; i < 9; i++) {
          const t0 = performance.now();
          const res = await fetch(`/api/tasks?order=desc&limit=${page}${q}`, {headers: {Authorization: 'Bearer ' + token}, cache: 'no-store'});
          await res.json();
          times.push(performance.now() - t0);
        }
        times.sort((a, b) => a - b);
        out[name] = times[4];
      }
      return out;
    }, [queries, pool.token, PAGE]);
    console.log('# list latency, median ms: ' + Object.entries(medians).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', '));
    for (const [name, ms] of Object.entries(medians)) assert.ok(ms < 200, `${name}: ${ms.toFixed(1)} ms`);
  });

  test('search: by a word of the title, by an id whole or by its start', async () => {
    const needles = await all('q=needle');
    assert.equal(needles.length, 8);
    await search('NEEDLE');
    await showing(needles, 'a search of titles, whatever the case');
    assert.ok((await page.locator('#task-table tbody tr').allInnerTexts()).every((t) => /needle/.test(t)));
    await search(done.agent);
    await showing([done.agent], 'an id');
    const prefix = done.agent.slice(0, 7);
    await search(prefix);
    await showing(await firstPage('q=' + prefix), 'an id\'s start');
    await search('no task has this');
    await showing([], 'a search that matches nothing');
    assert.ok(await page.locator('#tasks-empty').isVisible());
    await clearFilters();
    await showing(await firstPage(''), 'the list again');
  });

  test('filters: queue, owner, agent, created time and status', async () => {
    await openFilters();
    const filter = async (name, value, query, what) => {
      await page.fill(`#filter-form input[name=${name}]`, value);
      await page.press(`#filter-form input[name=${name}]`, 'Tab');  // a change
      await showing(await firstPage(query), what);
    };
    await filter('queue', 'bulk-b', 'queue=bulk-b', 'the queue bulk-b');
    await filter('owner', 'slot-9', 'queue=bulk-b&owner=slot-9', 'bulk-b and slot-9: none');  // slot-9's are in bulk-a
    assert.ok(await page.locator('#tasks-empty').isVisible());
    await filter('queue', '', 'owner=slot-9', 'the owner slot-9');
    assert.match(await page.locator('#filters-on').innerText(), /1 on/);
    await filter('owner', '', '', 'no filter');
    await filter('agent', 'standin', 'agent=standin', 'the agent standin');
    await filter('agent', '', '', 'no filter');
    // Created after the line: the 10 that came last.
    await page.selectOption('#filter-form select[name=range]', 'custom');
    await page.evaluate((iso) => {
      const d = new Date(Date.parse(iso));
      const two = (n) => String(n).padStart(2, '0');
      const input = document.querySelector('#filter-form input[name=since]');
      input.value = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
      input.dispatchEvent(new Event('change', {bubbles: true}));
    }, late);
    const lateOnes = await firstPage('since=' + encodeURIComponent(late) + '&queue=bulk-a');
    assert.equal(lateOnes.length, 10);
    await filter('queue', 'bulk-a', 'since=' + encodeURIComponent(late) + '&queue=bulk-a', 'created after the line');
    assert.ok((await page.locator('#task-table tbody tr').allInnerTexts()).every((t) => /late arrival/.test(t)));
    await page.selectOption('#filter-form select[name=range]', '1h');
    await showing(await firstPage('since=1h&queue=bulk-a'), 'the last hour');
    // The status tabs narrow the same list.
    await page.click('#filter-form button[type=reset]');
    await page.click('#status-tabs button[data-filter="failed"]');
    await showing([done.failing], 'the failed tasks');
    await clearFilters();
    await showing(await firstPage(''), 'the list again');
  });

  test('paging: next and previous by the cursor, and every task of a search once', async () => {
    const p1 = await pool.api('GET', `/api/tasks?order=desc&limit=${PAGE}`);
    const p2 = await pool.api('GET', `/api/tasks?order=desc&limit=${PAGE}&cursor=${p1.next_cursor}`);
    const p3 = await pool.api('GET', `/api/tasks?order=desc&limit=${PAGE}&cursor=${p2.next_cursor}`);
    await showing(p1.tasks.map((t) => t.id), 'the first page');
    assert.ok(await page.locator('#page-prev').isDisabled());
    await page.click('#page-next');
    await showing(p2.tasks.map((t) => t.id), 'the second page');
    assert.match(await page.locator('#page-info').innerText(), /^51–100 of 5003$/);
    await page.click('#page-next');
    await showing(p3.tasks.map((t) => t.id), 'the third page');
    await page.click('#page-prev');
    await showing(p2.tasks.map((t) => t.id), 'back to the second page');
    await page.click('#page-prev');
    await showing(p1.tasks.map((t) => t.id), 'back to the first page');
    // A fifth of the tasks, 20 pages: each once, in order, and no page after the last.
    const betas = await all('q=beta');
    assert.equal(betas.length, 998);
    await search('beta');
    const seen = [];
    for (let n = 1; ; n++) {
      await showing(betas.slice((n - 1) * PAGE, n * PAGE), `page ${n} of beta`);
      seen.push(...await shownIds());
      if (await page.locator('#page-next').isDisabled()) break;
      await page.click('#page-next');
    }
    assert.deepEqual(seen, betas);
    await clearFilters();
  });

  test('bulk: cancel the ticked tasks, then retry them', async () => {
    await search('gamma');
    const first = await firstPage('q=gamma');
    await showing(first, 'the gammas');
    await page.check('#pick-page');
    const spared = first.slice(0, 2);
    for (const id of spared) await page.uncheck(`#task-table input[data-pick="${id}"]`);
    await pageUntil(page, () => document.querySelector('#bulk-count').textContent === '48 selected');
    assert.equal(await page.locator('#pick-page').evaluate((b) => b.indeterminate), true);
    const cancel = page.locator('#bulk-bar button[data-bulk=cancel]');
    await cancel.click();
    assert.match(await cancel.innerText(), /Sure\?/, 'cancel asks once more');
    await cancel.click();
    await pageUntil(page, () => /Cancelled 48 tasks/.test(document.querySelector('#toasts').innerText));
    await pageUntil(page, () => document.querySelector('#bulk-bar').hidden);
    const cancelled = first.slice(2);
    const states = async (ids) => (await Promise.all(ids.map((id) => pool.api('GET', '/api/tasks/' + id)))).map((t) => t.status);
    assert.ok((await states(cancelled)).every((s) => s === 'cancelled'));
    assert.deepEqual(await states(spared), ['ready', 'ready']);
    // The cancelled gammas, every one ticked and sent back to the queue.
    await page.click('#status-tabs button[data-filter="cancelled"]');
    await showing(cancelled, 'the cancelled gammas');
    await page.check('#pick-page');
    await pageUntil(page, () => document.querySelector('#bulk-count').textContent === '48 selected');
    await page.click('#bulk-bar button[data-bulk=retry]');
    await pageUntil(page, () => /Queued again 48 tasks/.test(document.querySelector('#toasts').innerText));
    await showing([], 'no gamma left cancelled');
    assert.ok((await states(cancelled)).every((s) => s === 'ready'));
    await clearFilters();
  });

  test('the cost column: what each task\'s agents cost, from the usage ledger', async () => {
    const cost = async (id) => {
      await search(id);
      await showing([id], 'the task ' + id);
      return page.locator(`#task-table tr[data-task-id="${id}"] td.cost`).innerText();
    };
    assert.equal(await cost(done.agent), '$0.4200');
    assert.equal(await cost(done.quick), '–');
    // The newest page: the agent's task among tasks that cost nothing.
    await clearFilters();
    await showing(await firstPage(''), 'the list again');
    const costs = await page.$$eval('#task-table td.cost', (tds) => tds.map((td) => td.textContent));
    assert.equal(costs.filter((c) => c === '$0.4200').length, 1);
    assert.equal(costs.filter((c) => c === '–').length, costs.length - 1);
  });

  test('a worker\'s history: its attempts, newest first, with their tasks and costs', async () => {
    const slot = await pool.slot('slot-1');
    await page.click(`#slots .slot[data-slot="slot-1"] a[data-worker="${slot.worker_id}"]`);
    await pageUntil(page, (id) => document.querySelector('#worker-view').dataset.workerId === id &&
        document.querySelectorAll('#worker-attempts tbody tr[data-task-id]').length === 3, slot.worker_id);
    const rows = await page.$$eval('#worker-attempts tbody tr', (trs) => trs.map((t) => ({id: t.dataset.taskId, text: t.innerText})));
    assert.deepEqual(rows.map((r) => r.id), [done.agent, done.failing, done.quick]);
    assert.match(rows[0].text, /an agent at work[\s\S]*\$0\.4200/);
    assert.match(rows[1].text, /failing one[\s\S]*failed \(3\)/);
    assert.match(rows[2].text, /quick one[\s\S]*exited \(0\)/);
    // A task of it opens in the detail.
    await page.click(`#worker-attempts a[data-task="${done.failing}"]`);
    await pageUntil(page, (id) => document.querySelector('#detail-body').dataset.taskId === id, done.failing);
    // And a worker named in the detail's attempts opens its history too.
    await page.click('#worker-view-close');
    assert.ok(await page.locator('#worker-view').isHidden());
    await page.click(`#attempts-table a[data-worker="${slot.worker_id}"]`);
    await pageUntil(page, () => !document.querySelector('#worker-view').hidden);
  });

  test('the chart over the last hour, day and week', async () => {
    const shown = (range, bucket) => pageUntil(page, ([range, bucket]) => {
      const c = document.querySelector('#chart');
      return c.dataset.range === range && c.dataset.bucket === String(bucket) && Number(c.dataset.done) >= 1;
    }, [range, bucket]);
    await shown('1h', 60000);
    await page.click('#chart-range button[data-range="24h"]');
    await shown('24h', 15 * 60000);
    assert.equal(await page.locator('#chart-title').textContent(), 'Last 24 hours');
    assert.equal(await page.locator('#key-done').innerText(), 'done/15 min');
    await page.click('#chart-range button[data-range="7d"]');
    await shown('7d', 2 * 3600000);
    assert.equal(await page.locator('#key-done').innerText(), 'done/2 h');
    assert.ok(await page.locator('#chart-range button[data-range="7d"]').evaluate((b) => b.classList.contains('selected')));
    await page.click('#chart-range button[data-range="1h"]');
    await shown('1h', 60000);
  });

  test('the page made no errors', () => {
    assert.deepEqual(page.problems, []);
  });
});

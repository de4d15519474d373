// What the dashboard's browser tests share: a real pool (`tx init` and `tx orchestrator start
// --daemon --http 127.0.0.1:0` in a temporary directory), stopped with --force and checked to
// leave no process behind; headless Debian chromium through playwright-core; and polling.

import {execFile} from 'node:child_process';
import {mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {promisify} from 'node:util';
import {chromium} from 'playwright-core';

const run = promisify(execFile);

export const TX = process.env.TX_BINARY;
if (!TX) throw new Error('TX_BINARY must name the tx binary under test');

// Sanitizer builds start processes several times slower: every bound is multiplied by this.
export const SLOW = Number(process.env.TX_TEST_SLOWDOWN || 1);
export const CHROMIUM = process.env.TX_CHROMIUM || '/usr/bin/chromium';

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// Polls `fn` until it returns a truthy value (which is returned), or throws after `timeoutMs`
// with `what` and the last value seen.
export async function until(what, fn, timeoutMs = 10000, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs * SLOW;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs * SLOW} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    }
    await sleep(intervalMs);
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

export class Pool {
  // `config`: the text of .tx/config.toml, written before the pool starts.
  static async start({workers = 3, heartbeat = '1s', config = ''} = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'tx-dashboard-'));
    const pool = new Pool(dir);
    await pool.tx('init');
    if (config) writeFileSync(join(dir, '.tx', 'config.toml'), config);
    await pool.tx('orchestrator', 'start', '--workers', String(workers), '--http', '127.0.0.1:0',
                  '--daemon', '--heartbeat-interval', heartbeat);
    pool.running = true;
    const status = await pool.status();
    pool.url = status.config.http;
    pool.token = readFileSync(join(dir, '.tx', 'token'), 'utf8').trim();
    pool.pids = new Set([status.pid]);
    await until('the pool\'s workers to run', async () => {
      const s = await pool.status();
      return s.slots.length === workers && s.slots.every((x) => x.state === 'running' && x.worker_status === 'idle');
    }, 20000);
    return pool;
  }

  constructor(dir) {
    this.dir = dir;
    this.running = false;
  }

  // git in `repo` (under the pool's directory); resolves to its output.
  async git(repo, ...args) {
    const {stdout} = await run('git', ['-C', repo, ...args], {timeout: 60000 * SLOW});
    return stdout;
  }

  async tx(...args) {
    const {stdout} = await run(TX, args, {cwd: this.dir, timeout: 120000 * SLOW});
    return stdout;
  }

  async json(...args) {
    return JSON.parse(await this.tx('--json', ...args));
  }

  async status() {
    const s = await this.json('orchestrator', 'status');
    for (const slot of s.slots || []) if (slot.pid) this.pids?.add(slot.pid);
    return s;
  }

  async slot(name) {
    return (await this.status()).slots.find((s) => s.slot === name);
  }

  // A request to the pool's API with the admin token.
  async api(method, path, body) {
    const res = await fetch(this.url + path, {
      method,
      headers: {Authorization: 'Bearer ' + this.token, 'Content-Type': 'application/json'},
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  async addTask(title, command, extra = {}) {
    return this.api('POST', '/api/tasks', Object.assign({title, command}, extra));
  }

  // Adds a task for each body (POST /api/tasks), `concurrency` requests at a time; resolves to
  // the tasks added, in the order of `bodies`.
  async addTasks(bodies, concurrency = 16) {
    const out = new Array(bodies.length);
    let next = 0;
    const lane = async () => {
      while (next < bodies.length) {
        const i = next++;
        out[i] = await this.api('POST', '/api/tasks', bodies[i]);
      }
    };
    await Promise.all(Array.from({length: concurrency}, lane));
    return out;
  }

  // Stops the pool with --force and checks that no process of it is left; removes its directory.
  async stop() {
    if (!this.running) return;
    this.running = false;
    try {
      await this.status();  // the newest worker pids
    } catch (_) {
      // already gone
    }
    await this.tx('orchestrator', 'stop', '--force');
    await until('every process of the pool to exit',
                () => [...this.pids].every((p) => !alive(p)) && this.leftovers().length === 0, 20000);
    rmSync(this.dir, {recursive: true, force: true});
  }

  // The processes whose command line names this pool's directory (the tests' task commands do,
  // so an agent left behind is found).
  leftovers() {
    const out = [];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
        if (cmd.includes(this.dir) && Number(name) !== process.pid) out.push(Number(name));
      } catch (_) {
        // exited meanwhile
      }
    }
    return out;
  }
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    // Playwright gives each launch a fresh, temporary user-data dir.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 60000 * SLOW,
  });
}

// A page on the dashboard whose console errors and failed requests are collected, so a test can
// show them when it fails.
export async function openDashboard(browser, pool, {width = 1366, height = 850, token} = {}) {
  const context = await browser.newContext({viewport: {width, height}});
  if (token) {
    await context.addInitScript((t) => localStorage.setItem('tx.token', t), token);
  }
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push('page error: ' + e.message));
  page.on('console', (m) => {
    // A refused request is logged by the browser too; what the page makes of it is tested.
    if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) page.problems.push('console: ' + m.text());
  });
  page.setDefaultTimeout(10000 * SLOW);
  await page.goto(pool.url + '/');
  return page;
}

// Waits for `fn` (run in the page with `arg`) to return a truthy value, for at most `ms` (times
// SLOW). Returns that value.
export async function pageUntil(page, fn, arg, ms = 10000) {
  const handle = await page.waitForFunction(fn, arg, {timeout: ms * SLOW, polling: 50});
  return handle.jsonValue();
}

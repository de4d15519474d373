// tx mcp driven by the official MCP TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in
// package-lock.json) over stdio, as an agent CLI drives it (issue 22): the real tx binary
// (TX_BINARY), a real SQLite store in a fresh directory, a task really claimed with its token.
// The SDK checks every message against the specification's schemas: initialize and its version
// negotiation, tools/list (each tool's inputSchema compiled by the SDK), tools/call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const TX = process.env.TX_BINARY;
if (!TX) throw new Error('TX_BINARY must name the tx binary under test');

// The environment of this process without any TX_* variable, plus `extra`.
function envWith(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TX_')) env[k] = v;
  return { ...env, ...extra };
}

function tx(dir, args, extra = {}) {
  return execFileSync(TX, args, { cwd: dir, env: envWith(extra), encoding: 'utf8' });
}
function txJson(dir, args, extra = {}) { return JSON.parse(tx(dir, ['--json', ...args], extra)); }

// A store with one task claimed by worker w1: the directory, the task's id and its token.
function claimedTask(title) {
  const dir = mkdtempSync(join(tmpdir(), 'tx-mcp-sdk-'));
  tx(dir, ['init']);
  const id = txJson(dir, ['task', 'add', title]).id;
  const token = String(txJson(dir, ['claim', id, '--worker', 'w1']).token);
  return { dir, id, token, db: realpathSync(join(dir, '.tx', 'tx.db')) };
}

async function connect({ dir, id, token, db }) {
  const transport = new StdioClientTransport({
    command: TX,
    args: ['mcp'],
    cwd: dir,
    env: envWith({ TX_DB: db, TX_TASK_ID: id, TX_CLAIM_TOKEN: token }),
    stderr: 'pipe',
  });
  // The client hands the revision agreed at initialize to a transport that takes one.
  transport.setProtocolVersion = (version) => { transport.agreed = version; };
  const client = new Client({ name: 'tx-sdk-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const text = (result) => result.content.map((c) => c.text).join('\n');

test('the SDK client initializes, lists every tool and finishes the task with task_done', async () => {
  const task = claimedTask('through the SDK');
  try {
    const client = await connect(task);
    assert.equal(client.getServerVersion().name, 'tx');
    assert.ok(client.getServerCapabilities().tools);
    // The SDK asked for its latest revision; tx serves it, so that is the one agreed.
    assert.equal(client.transport.agreed, LATEST_PROTOCOL_VERSION);
    assert.equal(LATEST_PROTOCOL_VERSION, '2025-11-25');

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(),
      ['task_add', 'task_ask', 'task_done', 'task_fail', 'task_note', 'task_review', 'task_show']);
    for (const t of tools) assert.equal(t.inputSchema.type, 'object', t.name);

    const shown = await client.callTool({ name: 'task_show', arguments: {} });
    assert.equal(shown.isError, false);
    assert.equal(shown.structuredContent.status, 'running');

    const noted = await client.callTool({ name: 'task_note', arguments: { text: 'via the SDK' } });
    assert.equal(noted.isError, false, text(noted));

    const done = await client.callTool({ name: 'task_done', arguments: { result: 'sdk ok' } });
    assert.equal(done.isError, false, text(done));
    assert.equal(text(done), `${task.id} is done`);
    const after = txJson(task.dir, ['task', 'show', task.id]);
    assert.equal(after.status, 'done');
    assert.equal(after.result, 'sdk ok');
    assert.equal(after.metadata.notes[0].text, 'via the SDK');

    // Now the token is stale: refused as a tool error, and nothing changes.
    const again = await client.callTool({ name: 'task_fail', arguments: { error: 'late' } });
    assert.equal(again.isError, true);
    assert.match(text(again), /stale/);
    assert.equal(txJson(task.dir, ['task', 'show', task.id]).status, 'done');
    await client.close();
  } finally {
    rmSync(task.dir, { recursive: true, force: true });
  }
});

test('the SDK client sees task_add refused past max_subtasks', async () => {
  const task = claimedTask('parent');
  try {
    writeFileSync(join(task.dir, '.tx', 'config.toml'), '[worker]\nmax_subtasks = 1\n');
    const client = await connect(task);
    const first = await client.callTool({ name: 'task_add', arguments: { title: 'child', priority: 3 } });
    assert.equal(first.isError, false, text(first));
    assert.equal(first.structuredContent.metadata.parent, task.id);
    const second = await client.callTool({ name: 'task_add', arguments: { title: 'one too many' } });
    assert.equal(second.isError, true);
    assert.match(text(second), /max_subtasks = 1/);
    assert.equal(txJson(task.dir, ['task', 'list']).length, 2);
    // An unknown tool is a protocol error, which the SDK raises.
    await assert.rejects(client.callTool({ name: 'task_delete', arguments: {} }), /-32602|Unknown tool/);
    await client.close();
  } finally {
    rmSync(task.dir, { recursive: true, force: true });
  }
});

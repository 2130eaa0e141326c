import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t, { type Test } from 'tap';
import { validateAgentConfig } from '../../agent/config.js';
import { createAgent, nextDelay, runCycle } from '../../agent/run.js';
import { publicKeyHex } from '../../src/shared/signing.js';

// A server (or a man in the middle) that keeps a device's enrollment pending chooses its
// retry_after. Node's timers take at most 2^31-1 ms (24.8 days) and run anything longer, or
// Infinity, after 1 ms: a retry_after of 35 days, or a fraction of a second, would make the
// agent loop ask again (and write its state file durably) about a thousand times a second.
// The wait is the server's whole seconds, never longer than `interval`; anything else (a
// fraction, a number past 2^53) is the default of 60 s. The agent runs in-process against a
// server on 127.0.0.1; nothing waits.

const INTERVAL_MS = 5 * 60_000;
const TIMER_MAX_MS = 2 ** 31 - 1;

async function pendingServer(t: Test, retryAfter: unknown): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    if (req.method === 'POST' && req.url === '/auth') {
      res.writeHead(202, { 'content-type': 'application/json' }).end(`{"state":"pending","retry_after":${JSON.stringify(retryAfter)}}`);
    } else {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"DEVICE_TOKEN_INVALID"}}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** One cycle of a fresh device against a server that answers every auth request pending with `retryAfter`. */
async function delayAfterPending(t: Test, retryAfter: unknown): Promise<{ delay: number; code: string | undefined }> {
  const dir = await mkdtemp(join(tmpdir(), 'agent-enroll-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'slot-a'), 'v1', { mode: 0o755 });
  await symlink('slot-a', join(dir, 'current'));
  const config = validateAgentConfig({
    device_id: 'dev-enroll', artifact: 'app', public_key: publicKeyHex(randomBytes(32)), http_url: await pendingServer(t, retryAfter),
    slot_dir: dir, interval: `${INTERVAL_MS / 1000}s`, restart_command: 'true', identity_key_file: join(dir, 'identity.pem'),
  }, join(dir, 'agent.yaml'));
  const ctx = await createAgent(config, pino({ level: 'silent' }));
  t.teardown(() => ctx.transports.close());
  const result = await runCycle(ctx);
  return { delay: nextDelay(ctx, result), code: result.ok ? undefined : result.error.code };
}

t.test('a retry_after the server means is waited', async (t) => {
  const { delay, code } = await delayAfterPending(t, 60);
  t.equal(code, 'AGENT_ENROLLMENT_PENDING');
  t.ok(delay > 55_000 && delay <= 60_000, `waits about 60 s (${delay} ms)`);
});

for (const [what, retryAfter] of [['35 days', 35 * 86_400], ['a year', 365 * 86_400]] as const) {
  t.test(`a retry_after of ${what} is cut to interval, not run after 1 ms by an overflowing timer`, async (t) => {
    const { delay, code } = await delayAfterPending(t, retryAfter);
    t.equal(code, 'AGENT_ENROLLMENT_PENDING');
    t.ok(delay <= INTERVAL_MS && delay <= TIMER_MAX_MS, `the next cycle comes after at most interval (${delay} ms)`);
    t.ok(delay > INTERVAL_MS - 5_000, `and not much sooner (${delay} ms)`);
  });
}

for (const retryAfter of [0.001, 0.5, -5, '60', 1e308]) {
  t.test(`a retry_after of ${JSON.stringify(retryAfter)}, not whole positive seconds (a safe integer), is the default of 60 s`, async (t) => {
    const { delay, code } = await delayAfterPending(t, retryAfter);
    t.equal(code, 'AGENT_ENROLLMENT_PENDING');
    t.ok(delay > 55_000 && delay <= 60_000, `waits about 60 s (${delay} ms)`);
  });
}

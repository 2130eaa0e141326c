import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { AgentContext } from '../../agent/context.js';
import { nextDelay, type CycleResult } from '../../agent/run.js';
import { REPO_ROOT } from '../helpers/server.js';

// A pending manifest (retry_after, no signature) is retried after min(retry_after, interval),
// and docs/agent.md says so.
t.test('a pending answer is heartbeated again after the smaller of retry_after and interval', async (t) => {
  const ctx = (intervalMs: number) => ({ config: { intervalMs }, state: { backoffUntil: 0 } }) as unknown as AgentContext;
  const pending = (seconds: number) => ({ ok: true, outcome: { kind: 'retry-later', retryAfterSeconds: seconds } }) as unknown as CycleResult;
  t.equal(nextDelay(ctx(60_000), pending(5)), 5_000, 'retry_after when it is shorter');
  t.equal(nextDelay(ctx(2_000), pending(30)), 2_000, 'interval when it is shorter');
  const doc = await readFile(join(REPO_ROOT, 'docs', 'agent.md'), 'utf8');
  t.match(doc, /`update_available` with `retry_after > 0` and no signature: log and heartbeat again after\s+`min\(retry_after, interval\)`/, 'docs/agent.md states the rule the code follows');
});

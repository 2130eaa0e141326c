import type { SweeperApi, SweepResult } from '../../messages/sweeper.js';
import { runActor, type OwnApi } from '../runtime.js';
import { createSweeperMetrics } from './metrics.js';
import { planSweep } from './policy.js';
import { sweepLeadership } from './leader.js';


await runActor(async (ctx) => {
  const { retention } = ctx.config;
  const metrics = createSweeperMetrics(ctx.registry);
  let running: Promise<SweepResult> | undefined;
  let timer: NodeJS.Timeout | undefined;
  // Cluster mode: one sweep at a time in the whole cluster (an advisory lock); undefined on one node.
  const leadership = sweepLeadership(ctx.config, ctx.log);

  const sweepOnce = async (trigger: 'schedule' | 'admin'): Promise<SweepResult> => {
    const started = Date.now();
    const refs = await ctx.call('manifester', (m) => m.references());
    const inventory = await ctx.call('store-keeper', (s) => s.inventory());
    const plan = planSweep(inventory.derived, inventory.binaries, { current: new Set(refs.current), history: new Set(refs.history) }, {
      deltaMaxAgeMs: retention.deltaMaxAgeMs,
      deltasMaxTotalBytes: retention.deltasMaxTotalBytes,
      collectOrphanBinaries: retention.collectOrphanBinaries,
      orphanBinaryMinAgeMs: retention.orphanBinaryMinAgeMs,
    }, Date.now());
    for (const name of plan.unparseable) ctx.log.debug({ file: name }, 'retention: not a derived-file name; left alone');
    for (const { file, reason } of plan.derived) ctx.log.debug({ file: file.name, reason }, 'retention: removing derived file');
    const removed = await ctx.call('store-keeper', (s) => s.remove({
      derived: plan.derived.map((d) => d.file.name),
      binaries: plan.binaries.map((b) => b.hash),
    }));
    const result: SweepResult = {
      removed: { deltas: removed.deltas, full: removed.full, binaries: removed.binaries },
      bytes_freed: removed.bytes,
      ignored: plan.unparseable.length,
      duration_ms: Date.now() - started,
    };
    metrics.swept(result);
    ctx.log.info({ trigger, ...result }, 'retention sweep done');
    return result;
  };

  /** One sweep at a time: a request during a sweep joins it. */
  const sweep = (trigger: 'schedule' | 'admin'): Promise<SweepResult> => {
    running ??= (leadership ? leadership.run(() => sweepOnce(trigger)) : sweepOnce(trigger)).finally(() => (running = undefined));
    return running;
  };

  // Off by default; the first automatic sweep comes one interval after start, never at boot.
  const schedule = () => {
    timer = setTimeout(() => {
      sweep('schedule')
        .catch((err) => ctx.log.error({ err }, 'retention sweep failed'))
        .finally(schedule);
    }, retention.intervalMs);
  };
  if (retention.enabled) schedule();

  return {
    sweep: () => sweep('admin'),
    async drain() {
      clearTimeout(timer);
      await running?.catch(() => undefined);
      await leadership?.close();
    },
  } satisfies OwnApi<SweeperApi>;
});

import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { sha256File } from '../src/shared/hash.js';
import { flushReports, heartbeatBody, nowSeconds, queueReport, type AgentContext } from './context.js';
import { faultPoint } from './fault.js';
import { runRestartCommand } from './restart.js';
import { otherSlot, type SlotName } from './slots.js';
import type { PendingUpdate } from './state.js';

// Step 9, the boot phase: runs first whenever .pending_update exists. The boot count lives
// in the marker and is raised durably before anything else, so an agent that keeps dying
// while the new slot is active gives up after max_boot_attempts and rolls back. A rollback
// records its outcome before it swaps, so a crash part-way never leads to a second try of
// the same target (no loop).

export type BootOutcome = 'no-pending-update' | 'confirmed' | 'rolled-back' | 'stale-marker';

export async function bootPhase(ctx: AgentContext): Promise<BootOutcome> {
  const { log, store, slots } = ctx;
  const found = await store.readPending();
  if (found === undefined) return 'no-pending-update';
  const active = await slots.active();
  const pending = found === 'damaged' ? await reconstructMarker(ctx, active) : found;
  if (!pending) {
    await store.clearPending();
    return 'stale-marker';
  }
  if (pending.new_slot !== active) {
    // Crashed between marker and swap (the update was never activated), or after a rollback swap.
    log.warn({ pending, active }, 'pending update marker does not match the active slot; the update was not activated');
    await store.clearPending();
    return 'stale-marker';
  }
  pending.boot_count += 1;
  await store.writePending(pending);
  faultPoint('boot-before-health-check');
  log.info({ bootCount: pending.boot_count, newHash: pending.new_hash }, 'boot phase: confirming the new slot');
  if (pending.boot_count > ctx.config.maxBootAttempts) {
    return rollback(ctx, pending, `the new slot did not confirm within ${ctx.config.maxBootAttempts} boots`);
  }
  const running = (await sha256File(slots.path(active))).hash;
  if (running !== pending.new_hash) {
    return rollback(ctx, pending, `the active slot hashes to ${running}, not the installed ${pending.new_hash}`);
  }
  let lastError = '';
  for (let attempt = 1; attempt <= ctx.config.healthCheckTries; attempt++) {
    try {
      const body = await heartbeatBody(ctx, running, pending.target_version);
      await ctx.transports.run('health check', (t) => t.heartbeat(body, ctx.config.requestTimeoutMs));
      faultPoint('boot-after-health-check');
      await confirm(ctx, pending);
      return 'confirmed';
    } catch (err) {
      lastError = (err as Error).message;
      log.warn({ attempt, of: ctx.config.healthCheckTries, reason: lastError }, 'health check failed');
      if (attempt < ctx.config.healthCheckTries) await sleep(ctx.config.healthCheckDelayMs);
    }
  }
  return rollback(ctx, pending, `health check failed ${ctx.config.healthCheckTries} times: ${lastError}`);
}

async function confirm(ctx: AgentContext, pending: PendingUpdate): Promise<void> {
  // The new release's sequence is durable before the marker goes: a kill in between confirms again.
  const sequence = Math.max(ctx.state.releaseSequence, pending.release_sequence ?? 0);
  if (sequence !== ctx.state.releaseSequence) {
    ctx.state.releaseSequence = sequence;
    await ctx.store.save(ctx.state);
    faultPoint('boot-after-sequence-saved');
  }
  await ctx.store.clearPending(); // clears the boot count with it
  ctx.state.runningVersion = pending.target_version;
  ctx.state.consecutiveFailures = 0;
  await queueReport(ctx, {
    device_id: ctx.config.deviceId, previous_hash: pending.previous_hash, new_hash: pending.new_hash, success: true, timestamp: nowSeconds(),
  });
  await ctx.downloader.discard();
  ctx.log.info({ newHash: pending.new_hash, version: pending.target_version }, 'update confirmed');
  await flushReports(ctx);
}

async function rollback(ctx: AgentContext, pending: PendingUpdate, reason: string): Promise<BootOutcome> {
  const { log, slots, store } = ctx;
  log.error({ reason, newHash: pending.new_hash, back_to: pending.previous_slot }, 'rolling back to the previous slot');
  ctx.state.rolledBackTargets.push(pending.new_hash);
  await queueReport(ctx, {
    device_id: ctx.config.deviceId, previous_hash: pending.previous_hash, new_hash: pending.new_hash, success: false,
    rollback_reason: reason.slice(0, 500), timestamp: nowSeconds(),
  });
  await slots.activate(pending.previous_slot);
  faultPoint('boot-after-rollback-swap');
  await store.clearPending();
  const restart = await runRestartCommand(ctx.config.restartCommand);
  if (!restart.ok) {
    log.error({ status: restart.status, stderr: restart.stderrTail }, 'restart_command failed after a rollback; arming the restart cooldown');
    ctx.state.cooldownUntil = Date.now() + ctx.config.restartCooldownMs;
    await store.save(ctx.state);
  }
  await flushReports(ctx);
  return 'rolled-back';
}

/** A marker that fails validation: assume the swap happened and the other slot is the previous one. */
async function reconstructMarker(ctx: AgentContext, active: SlotName): Promise<PendingUpdate | undefined> {
  const previous = otherSlot(active);
  try {
    if (!(await stat(ctx.slots.path(previous))).isFile()) return undefined;
  } catch {
    ctx.log.error('pending update marker is damaged and there is no previous slot; keeping the active slot');
    return undefined;
  }
  ctx.log.error('pending update marker is damaged; treating the active slot as the unconfirmed new one');
  return {
    previous_slot: previous, previous_hash: (await sha256File(ctx.slots.path(previous))).hash,
    new_slot: active, new_hash: (await sha256File(ctx.slots.path(active))).hash, target_version: '', boot_count: 0,
  };
}

import { rm } from 'node:fs/promises';
import { UpdaterError, isUpdaterError } from '../src/shared/errors.js';
import { sha256File } from '../src/shared/hash.js';
import { verifyManifest } from '../src/shared/signing.js';
import { applyDelta, applyFull } from './apply.js';
import { flushReports, heartbeatBody, nowSeconds, queueReport, type AgentContext } from './context.js';
import { faultPoint } from './fault.js';
import { readManifest, type SignedUpdate } from './manifest.js';
import { checkRelease } from './release.js';
import { runRestartCommand } from './restart.js';
import { otherSlot, type SlotName } from './slots.js';

// Steps 1-8 of the cycle (docs/agent.md, "The cycle"), in order. The checks are gates, each before the next kind of
// work: the release statement (release.ts) and the signature before a byte is fetched, the transfer hash before any patch work,
// the hash of the slot as read back from disk before the swap.
//
//   heartbeat ─▶ release statement ─▶ retry later? ─▶ signature ─▶ download ─▶ transfer hash ─▶ patch/decompress
//      ─▶ slot hash ─▶ .pending_update ─▶ swap `current` ─▶ restart_command

export type CycleOutcome =
  | { kind: 'up-to-date' }
  | { kind: 'retry-later'; retryAfterSeconds: number }
  | { kind: 'cooling-down'; until: number }
  | { kind: 'refused-rolled-back-target'; targetHash: string }
  | { kind: 'updated'; targetHash: string };

export async function updateCycle(ctx: AgentContext): Promise<CycleOutcome> {
  const { log, slots, state } = ctx;
  await flushReports(ctx);
  if (state.cooldownUntil > Date.now()) {
    log.warn({ until: new Date(state.cooldownUntil).toISOString() }, 'restart cooldown active; no update this cycle');
    return { kind: 'cooling-down', until: state.cooldownUntil };
  }
  const active = await slots.active();
  const runningHash = (await sha256File(slots.path(active))).hash;

  // 1. heartbeat
  const body = await heartbeatBody(ctx, runningHash, state.runningVersion);
  const answer = await ctx.transports.run('heartbeat', (t) => t.heartbeat(body, ctx.config.requestTimeoutMs));
  const release = await checkRelease(ctx, answer, runningHash);
  const decision = readManifest(answer, runningHash, ctx.config.deltaFormats);
  faultPoint('after-heartbeat');
  if (decision.kind === 'update' && decision.update.targetHash === runningHash) {
    // Already installed: downloading and installing it again would only risk the device.
    log.info({ versionHash: runningHash }, 'the offered target is the one running; up to date');
    return { kind: 'up-to-date' };
  }
  if (decision.kind === 'up-to-date') {
    log.info({ versionHash: runningHash }, 'up to date');
    return decision;
  }
  // 2. a delta is being generated: come back later, download nothing
  if (decision.kind === 'retry-later') {
    log.info({ retryAfterSeconds: decision.retryAfterSeconds }, 'update being prepared; heartbeat again later');
    return decision;
  }
  const update = decision.update;
  if (state.rolledBackTargets.includes(update.targetHash)) {
    log.warn({ targetHash: update.targetHash }, 'this target was rolled back on this device before; not installing it again');
    return { kind: 'refused-rolled-back-target', targetHash: update.targetHash };
  }
  // 3. signature, before a single byte is downloaded
  if (!verifyManifest(release.publicKey, update.targetHash, update.transferHash, update.signature)) {
    throw new UpdaterError('AGENT_SIGNATURE_INVALID', `the manifest for ${update.targetHash} is not signed by the trusted signing key`);
  }
  faultPoint('after-signature-check');
  log.info({ mode: update.mode, ...(update.mode === 'delta' ? { format: update.format } : {}), targetHash: update.targetHash, version: update.targetVersion, transferSize: update.transferSize }, 'update available');
  await install(ctx, update, active, runningHash, release.sequence);
  return { kind: 'updated', targetHash: update.targetHash };
}

async function install(ctx: AgentContext, update: SignedUpdate, active: SlotName, runningHash: string, releaseSequence: number): Promise<void> {
  const { log, slots, store, downloader } = ctx;
  // 4. download, resumable
  const transferPath = await downloader.fetch({
    endpoint: update.endpoint, transferHash: update.transferHash, targetHash: update.targetHash, size: update.transferSize,
  }, ctx.transports);
  faultPoint('after-download');
  // 5. transfer hash, before any patch work
  const received = await sha256File(transferPath);
  if (received.hash !== update.transferHash) {
    await downloader.discard();
    throw new UpdaterError('AGENT_TRANSFER_HASH_MISMATCH', `the transfer hashes to ${received.hash}, not delta_hash ${update.transferHash}`);
  }
  faultPoint('after-transfer-check');
  // 6. rebuild into the inactive slot
  const target = otherSlot(active);
  const targetPath = slots.path(target);
  try {
    if (update.mode === 'delta') await applyDelta(ctx.config.slotDir, transferPath, slots.path(active), targetPath, update.format);
    else await applyFull(transferPath, slots.path(active), targetPath);
  } catch (err) {
    // The slot was written part-way, whatever stopped it: it goes, or after ENOSPC it would keep
    // the disk full (the device's services, and the agent's own state, could write nothing).
    await rm(targetPath, { force: true });
    // A patch that does not apply (corrupt, of either format) is as wrong as a wrong rebuild:
    // the transfer goes too, as it would fail the same way again.
    if (isUpdaterError(err) && err.code === 'AGENT_RECONSTRUCTION_MISMATCH') await downloader.discard();
    throw err;
  }
  faultPoint('after-patch');
  // 7. the slot as written to disk, read back
  const rebuilt = await sha256File(targetPath);
  if (rebuilt.hash !== update.targetHash || rebuilt.size !== update.targetSize) {
    await rm(targetPath, { force: true });
    await downloader.discard();
    throw new UpdaterError('AGENT_RECONSTRUCTION_MISMATCH',
      `the rebuilt ${target} hashes to ${rebuilt.hash} (${rebuilt.size} bytes), not target_hash ${update.targetHash} (${update.targetSize} bytes)`);
  }
  faultPoint('after-reconstruction-check');
  // 8. marker, swap, restart
  await store.writePending({
    previous_slot: active, previous_hash: runningHash, new_slot: target, new_hash: update.targetHash,
    target_version: update.targetVersion, boot_count: 0, release_sequence: releaseSequence,
  });
  faultPoint('after-marker');
  await slots.activate(target);
  faultPoint('after-swap');
  log.info({ slot: target, targetHash: update.targetHash }, 'new slot activated; restarting');
  const restart = await runRestartCommand(ctx.config.restartCommand);
  if (!restart.ok) {
    await restartFailed(ctx, active, runningHash, update, `restart_command exited with ${restart.status}: ${restart.stderrTail.trim()}`);
  }
  faultPoint('after-restart');
  await downloader.discard();
}

/** The new binary could not be started: go back to the old slot and hold off for the cooldown. */
async function restartFailed(ctx: AgentContext, active: SlotName, runningHash: string, update: SignedUpdate, reason: string): Promise<never> {
  const { slots, store, state } = ctx;
  state.cooldownUntil = Date.now() + ctx.config.restartCooldownMs;
  await queueReport(ctx, {
    device_id: ctx.config.deviceId, previous_hash: runningHash, new_hash: update.targetHash, success: false,
    rollback_reason: reason.slice(0, 500), timestamp: nowSeconds(),
  });
  await slots.activate(active);
  await store.clearPending();
  await flushReports(ctx);
  throw new UpdaterError('AGENT_RESTART_FAILED', `${reason}; back on ${active}, no update before ${new Date(state.cooldownUntil).toISOString()}`);
}


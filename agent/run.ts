import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isUpdaterError, serializeError } from '../src/shared/errors.js';
import { createLogger, type Logger } from '../src/shared/logger.js';
import { removeLeftoverPatch } from './apply.js';
import { retryDelay } from './backoff.js';
import { bootPhase, type BootOutcome } from './boot.js';
import type { AgentConfig } from './config.js';
import { makeContext, type AgentContext } from './context.js';
import { updateCycle, type CycleOutcome } from './cycle.js';
import { Transports } from './failover.js';
import { CoapTransport } from './coap-transport.js';
import { HttpTransport } from './http-transport.js';
import { lockSlotDir } from './lock.js';
import { SlotDir } from './slots.js';
import { StateStore } from './state.js';
import type { Transport } from './transport.js';
import { EnrolledTransport, enrollmentRetryMs } from './enroll.js';
import { DeviceIdentity } from './identity.js';

export interface AgentRunOptions {
  once: boolean;
  /** Stops the loop between cycles (SIGTERM). */
  signal?: AbortSignal;
  log?: Logger;
}

export type CycleResult =
  | { ok: true; boot: BootOutcome; outcome: CycleOutcome }
  | { ok: false; boot?: BootOutcome; error: { code: string; message: string } };

function transportFor(config: AgentConfig, name: 'http' | 'coap', identity: DeviceIdentity | undefined, log: Logger): Transport | undefined {
  const transport = name === 'http' && config.httpUrl ? new HttpTransport(config.httpUrl, config.caCertificates)
    : name === 'coap' && config.coapUrl ? new CoapTransport(config.coapUrl) : undefined;
  // With an identity, every request carries the device token (docs/agent.md, "Identity").
  return transport && identity ? new EnrolledTransport(transport, identity, config.requestTimeoutMs, log) : transport;
}

export async function createAgent(config: AgentConfig, log: Logger): Promise<AgentContext> {
  const identity = config.identityKeyFile ? await DeviceIdentity.open(config.deviceId, config.identityKeyFile, config.slotDir, log) : undefined;
  const primary = transportFor(config, config.primary, identity, log);
  if (!primary) throw Object.assign(new Error(`primary transport ${config.primary} has no URL`), { code: 'CONFIG_INVALID' });
  const fallback = transportFor(config, config.primary === 'http' ? 'coap' : 'http', identity, log);
  const slots = new SlotDir(config.slotDir);
  await slots.open();
  await removeLeftoverPatch(config.slotDir);
  const store = new StateStore(config.slotDir, log);
  return makeContext(config, log, slots, store, new Transports(primary, fallback, log), await store.load());
}

/** One cycle: the boot phase, then one heartbeat and whatever update it leads to. */
export async function runCycle(ctx: AgentContext): Promise<CycleResult> {
  let boot: BootOutcome | undefined;
  try {
    boot = await bootPhase(ctx);
    const outcome = await updateCycle(ctx);
    if (ctx.state.consecutiveFailures !== 0 || ctx.state.backoffUntil !== 0) {
      ctx.state.consecutiveFailures = 0;
      ctx.state.backoffUntil = 0;
      await ctx.store.save(ctx.state);
    }
    return { ok: true, boot, outcome };
  } catch (err) {
    const { code, message } = serializeError(err);
    ctx.log.error({ code, err: message }, 'update cycle failed');
    ctx.state.consecutiveFailures += 1;
    // ENOSPC may also surface from a state-file write, outside the download and patch code.
    const diskFull = (isUpdaterError(err) && err.code === 'AGENT_DISK_FULL') || (err as NodeJS.ErrnoException).code === 'ENOSPC';
    // A device waiting for an operator asks again when the server said, not on the error backoff.
    ctx.state.backoffUntil = Date.now() + (enrollmentRetryMs(err, ctx.config.intervalMs) ?? retryDelay(ctx.state.consecutiveFailures, diskFull, ctx.config));
    await ctx.store.save(ctx.state).catch((saveErr: Error) => ctx.log.error({ err: saveErr.message }, 'could not save agent state'));
    return { ok: false, ...(boot ? { boot } : {}), error: { code, message } };
  }
}

/** How long the loop waits after a cycle. */
export function nextDelay(ctx: AgentContext, result: CycleResult): number {
  if (!result.ok) return Math.max(0, ctx.state.backoffUntil - Date.now());
  // The server's retry_after, but never later than the regular heartbeat would come anyway.
  if (result.outcome.kind === 'retry-later') return Math.min(result.outcome.retryAfterSeconds * 1000, ctx.config.intervalMs);
  if (result.outcome.kind === 'updated') return 0; // the boot phase of the new slot comes next
  if (result.outcome.kind === 'cooling-down') return Math.min(ctx.config.intervalMs, Math.max(0, result.outcome.until - Date.now()));
  return ctx.config.intervalMs;
}

/**
 * Peak resident memory of this process in KiB. VmHWM belongs to the address space made by
 * exec, whereas getrusage's maxrss keeps the high-water mark of the parent that forked us.
 */
export function peakRssKb(): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (match) return Number(match[1]);
  } catch {
    // not Linux: fall back below
  }
  return process.resourceUsage().maxRSS;
}

/** The agent: with `once`, one cycle and exit status 0 when it ended without error. */
export async function runAgent(config: AgentConfig, options: AgentRunOptions): Promise<number> {
  const log = options.log ?? createLogger('agent', config.logLevel);
  let ctx: AgentContext;
  let unlock: () => Promise<void>;
  try {
    unlock = await lockSlotDir(config.slotDir);
  } catch (err) {
    log.error({ code: (err as { code?: string }).code, err: (err as Error).message }, 'agent cannot start');
    return 1;
  }
  try {
    ctx = await createAgent(config, log);
  } catch (err) {
    await unlock();
    log.error({ code: (err as { code?: string }).code, err: (err as Error).message }, 'agent cannot start');
    return 1;
  }
  try {
    if (options.once) {
      const result = await runCycle(ctx);
      log.info({ ok: result.ok, maxRssKb: peakRssKb() }, 'cycle finished');
      return result.ok ? 0 : 1;
    }
    // A restarted agent still honours the backoff its predecessor persisted (e.g. after ENOSPC).
    let delay = Math.max(0, ctx.state.backoffUntil - Date.now());
    while (!options.signal?.aborted) {
      if (delay > 0) {
        log.info({ delayMs: delay }, 'next cycle scheduled');
        await sleep(delay, undefined, { signal: options.signal }).catch(() => undefined);
        if (options.signal?.aborted) break;
      }
      delay = nextDelay(ctx, await runCycle(ctx));
    }
    return 0;
  } finally {
    await ctx.transports.close();
    await unlock();
  }
}

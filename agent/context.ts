import { statfs } from 'node:fs/promises';
import { arch, freemem, platform } from 'node:os';
import type { Logger } from '../src/shared/logger.js';
import type { AgentConfig } from './config.js';
import { Downloader } from './download.js';
import type { Transports } from './failover.js';
import type { SlotDir } from './slots.js';
import type { HeartbeatWire, ReportWire } from '../src/shared/wire/keys.js';
import type { AgentState, StateStore } from './state.js';

/** What every phase of the agent works with; built once per process. */
export interface AgentContext {
  readonly config: AgentConfig;
  readonly log: Logger;
  readonly slots: SlotDir;
  readonly store: StateStore;
  readonly transports: Transports;
  readonly downloader: Downloader;
  /** Loaded at start, saved after every change that must survive a crash. */
  state: AgentState;
}

export function makeContext(config: AgentConfig, log: Logger, slots: SlotDir, store: StateStore, transports: Transports, state: AgentState): AgentContext {
  return { config, log, slots, store, transports, state, downloader: new Downloader(config.slotDir, config, log) };
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

export async function heartbeatBody(ctx: AgentContext, versionHash: string, version: string): Promise<HeartbeatWire> {
  let freeDisk = 0;
  try {
    const fs = await statfs(ctx.config.slotDir);
    freeDisk = fs.bavail * fs.bsize;
  } catch {
    // Free disk is informative only; a failing statfs must not stop a heartbeat.
  }
  return {
    device_id: ctx.config.deviceId,
    version_hash: versionHash,
    hw_info: { arch: arch(), os: platform(), free_ram: freemem(), free_disk: freeDisk },
    timestamp: nowSeconds(),
    version,
    ...(ctx.config.artifact ? { artifact: ctx.config.artifact } : {}),
    ...(ctx.config.attributes !== undefined ? { attributes: ctx.config.attributes } : {}),
    // Left out when only bsdiff40 is asked for: the heartbeat of an agent before patch formats.
    ...(ctx.config.deltaFormats.some((f) => f !== 'bsdiff40') ? { delta_formats: ctx.config.deltaFormats } : {}),
  };
}

/** Queues a report durably, then tries to send every queued report. */
export async function queueReport(ctx: AgentContext, report: ReportWire): Promise<void> {
  ctx.state.unsentReports.push(report);
  await ctx.store.save(ctx.state);
}

/** Sends queued reports oldest first; stops at the first failure and keeps the rest for later. */
export async function flushReports(ctx: AgentContext): Promise<void> {
  while (ctx.state.unsentReports.length > 0) {
    const report = ctx.state.unsentReports[0]!;
    try {
      await ctx.transports.run('report', (t) => t.report(report, ctx.config.requestTimeoutMs));
    } catch (err) {
      ctx.log.warn({ reason: (err as Error).message, queued: ctx.state.unsentReports.length }, 'update report not delivered; kept for the next cycle');
      return;
    }
    ctx.log.info({ report }, 'update report delivered');
    ctx.state.unsentReports.shift();
    await ctx.store.save(ctx.state);
  }
}

import { open, readFile, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { replaceFileDurably, writeFully } from '../src/shared/durable-file.js';
import { UpdaterError, isUpdaterError } from '../src/shared/errors.js';
import type { Logger } from '../src/shared/logger.js';
import { retryDelay } from './backoff.js';
import type { AgentConfig } from './config.js';
import type { Transports } from './failover.js';
import { faultPoint } from './fault.js';
import type { DownloadSink } from './transport.js';

// A resumable download into slot_dir/.download.part. Its durable offset lives in
// slot_dir/.download.json and is only ever advanced after the part file is fsynced, so after
// a crash every byte below the recorded offset is on disk; bytes past it are cut off and
// fetched again. A cut link resumes from exactly where it broke (the part is synced first).

export const PART_FILE = '.download.part';
const RECORD_FILE = '.download.json';
const PROGRESS_EVERY_MS = 1000;

export interface TransferJob {
  endpoint: string;
  transferHash: string;
  targetHash: string;
  size: number;
}

interface Record {
  endpoint: string;
  transfer_hash: string;
  target_hash: string;
  size: number;
  offset: number;
}

export class Downloader {
  constructor(private readonly slotDir: string, private readonly config: AgentConfig, private readonly log: Logger) {}

  get partPath(): string {
    return join(this.slotDir, PART_FILE);
  }

  /** The durable offset of an earlier attempt at the same transfer, or 0. */
  private async resumeOffset(job: TransferJob): Promise<number> {
    let record: Partial<Record> | undefined;
    try {
      record = JSON.parse(await readFile(join(this.slotDir, RECORD_FILE), 'utf8')) as Partial<Record>;
    } catch {
      record = undefined;
    }
    const same = record && record.transfer_hash === job.transferHash && record.endpoint === job.endpoint
      && record.size === job.size && Number.isSafeInteger(record.offset) && record.offset! >= 0 && record.offset! <= job.size;
    return same ? record!.offset! : 0;
  }

  private record(job: TransferJob, offset: number): Promise<void> {
    const record: Record = { endpoint: job.endpoint, transfer_hash: job.transferHash, target_hash: job.targetHash, size: job.size, offset };
    return replaceFileDurably(join(this.slotDir, RECORD_FILE), `${JSON.stringify(record)}\n`);
  }

  /** Forgets the partial transfer (after it was used, or when it proved bad). */
  async discard(): Promise<void> {
    await rm(join(this.slotDir, RECORD_FILE), { force: true });
    await rm(this.partPath, { force: true });
  }

  /** Fetches the whole transfer into the part file and returns its path. */
  async fetch(job: TransferJob, transports: Transports): Promise<string> {
    let offset = await this.resumeOffset(job);
    if (offset === 0) await this.record(job, 0);
    const handle = await open(this.partPath, offset === 0 ? 'w' : 'r+').catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      offset = 0;
      await this.record(job, 0);
      return open(this.partPath, 'w');
    });
    try {
      // A part shorter than its record was damaged outside the agent: start over.
      if ((await handle.stat()).size < offset) offset = 0;
      // Bytes past the durable offset may be torn by the crash that left them.
      await handle.truncate(offset);
      if (offset > 0) this.log.info({ offset, size: job.size, endpoint: job.endpoint }, 'resuming download from its durable offset');
      for (let attempt = 1; offset < job.size; attempt++) {
        try {
          offset = await this.attempt(job, offset, handle, transports);
        } catch (err) {
          offset = await this.checkpointAfterFailure(job, handle, err);
          if (!isUpdaterError(err) || !['AGENT_TRANSPORT_FAILED', 'AGENT_TRANSFER_TOO_SLOW'].includes(err.code)
            || attempt >= this.config.downloadAttempts) {
            throw err;
          }
          const delay = retryDelay(attempt, false, this.config);
          this.log.warn({ attempt, offset, size: job.size, delayMs: delay, reason: err.message }, 'download interrupted; retrying');
          await sleep(delay);
        }
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    await this.record(job, job.size);
    return this.partPath;
  }

  private async checkpointAfterFailure(job: TransferJob, handle: FileHandle, err: unknown): Promise<number> {
    if (isUpdaterError(err) && (err.code === 'AGENT_TRANSFER_TOO_LARGE' || err.code === 'AGENT_DISK_FULL')) {
      await handle.truncate(0).catch(() => undefined);
      await this.discard();
      return 0;
    }
    // What arrived before the failure is good: make it durable so the retry starts after it.
    const { size } = await handle.stat();
    const offset = Math.min(size, job.size);
    await handle.sync();
    await this.record(job, offset);
    return offset;
  }

  /** One request from `offset`; resolves with the new durable offset. */
  private async attempt(job: TransferJob, startOffset: number, handle: FileHandle, transports: Transports): Promise<number> {
    const { config, log } = this;
    let written = startOffset;
    let durable = startOffset;
    let windowStart = Date.now();
    let windowBytes = 0;
    let lastProgress = Date.now();
    let firstCheckpoint = true;
    const controller = new AbortController();
    const abort = (code: 'AGENT_TRANSFER_TOO_SLOW' | 'AGENT_TRANSFER_TOO_LARGE', message: string) => {
      if (!controller.signal.aborted) controller.abort(new UpdaterError(code, message, { offset: written, size: job.size }));
    };
    const deadline = setTimeout(() => abort('AGENT_TRANSFER_TOO_SLOW', `the download passed its deadline of ${config.downloadDeadlineMs} ms`),
      config.downloadDeadlineMs);
    const floor = setInterval(() => {
      const seconds = (Date.now() - windowStart) / 1000;
      const rate = windowBytes / seconds;
      if (rate < config.minThroughputBytesPerSecond) {
        abort('AGENT_TRANSFER_TOO_SLOW', `the download ran at ${Math.round(rate)} B/s, below min_throughput_bps ${config.minThroughputBytesPerSecond}`);
      }
      windowStart = Date.now();
      windowBytes = 0;
    }, config.throughputWindowMs);

    const sink: DownloadSink = {
      begin: async (offset) => {
        if (offset !== written) {
          log.warn({ asked: written, got: offset }, 'the server ignored the range; starting the transfer over');
          await handle.truncate(offset);
          written = durable = offset;
        }
      },
      write: async (chunk) => {
        if (written + chunk.length > job.size) {
          abort('AGENT_TRANSFER_TOO_LARGE', `the transfer passed the announced delta_size of ${job.size} bytes`);
          throw controller.signal.reason;
        }
        try {
          await writeFully(handle, chunk, written);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new UpdaterError('AGENT_DISK_FULL', `writing ${this.partPath}: no space left`);
          throw err;
        }
        written += chunk.length;
        windowBytes += chunk.length;
        if (written - durable >= config.checkpointBytes || written === job.size) {
          await handle.sync();
          await this.record(job, written);
          durable = written;
          if (firstCheckpoint) {
            firstCheckpoint = false;
            faultPoint('mid-download');
          }
        }
        if (Date.now() - lastProgress >= PROGRESS_EVERY_MS) {
          lastProgress = Date.now();
          log.info({ endpoint: job.endpoint, received: written, size: job.size, percent: Math.floor((written / job.size) * 100) }, 'download progress');
        }
      },
    };
    try {
      await transports.run('download', (transport) => transport.download(job.endpoint, written, job.size, sink, controller.signal));
    } finally {
      clearTimeout(deadline);
      clearInterval(floor);
    }
    if (written !== job.size) {
      throw new UpdaterError('AGENT_TRANSPORT_FAILED', `the connection ended after ${written} of ${job.size} bytes`);
    }
    return written;
  }
}

import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DiffTask } from '../../messages/diff.js';
import type { TransferInfo, TransferKind } from '../../messages/store.js';
import { DEFAULT_DELTA_FORMAT, formatField, isDeltaFormat, type DeltaFormat } from '../../shared/delta-formats.js';
import { publishNoOverwrite } from '../../shared/durable-file.js';
import { UpdaterError, deserializeError } from '../../shared/errors.js';
import { assertSha256Hex } from '../../shared/hash.js';
import { binaryName, transferName } from '../../shared/store-layout.js';
import { expectedGenerationBytes, startDiffPool, type DiffPool, type RunDiffTask } from '../diff-pool/pool.js';
import type { Adoption, IndexedStore } from './cluster-adoption.js';
import type { ClusterFiles } from './cluster-files.js';
import type { StoreMetrics } from './metrics.js';

/** What the derived files need of the store that holds them (store.ts): its index, as cluster-adoption.ts reads it, and more. */
export interface DerivedFilesHost extends Omit<IndexedStore, 'inflight' | 'hotCache'> {
  readonly metrics: StoreMetrics;
  /** Shared with cluster-adoption.ts, which must not adopt a name this replica is generating. */
  readonly inflight: Map<string, Promise<TransferInfo>>;
  readonly adoption: Adoption;
  readonly cluster: ClusterFiles | undefined;
  /** Runs a write to the store: refused while full or read-only, errors mapped to stable codes. */
  writing<T>(what: string, write: () => Promise<T>): Promise<T>;
  refuseWhileDraining(): void;
}

/**
 * Deltas and compressed full files: generated on the diff pool on demand, one generation per
 * file name however many callers ask at once (in a cluster, once per name across the replicas),
 * then published under their final name and announced to the manifester.
 */
export class DerivedFiles {
  private readonly pool: DiffPool | undefined;
  private readonly runTask: RunDiffTask;
  /** Sum of the expected memory of the delta generations under way (docs/memory.md). */
  private expectedBytes = 0;

  /** `runTask` runs one diff task; by default on the diff pool's threads. */
  constructor(private readonly host: DerivedFilesHost, runTask?: RunDiffTask) {
    this.pool = runTask ? undefined : startDiffPool(host.config.store.deltaConcurrency);
    this.runTask = runTask ?? this.pool!.run;
  }

  /** What the store's budget metrics show of the generations. */
  budgets(): { queued: number; running: number; threads: number; expectedDiffBytes: number } {
    return { queued: this.pool?.queueSize ?? 0, running: this.host.inflight.size, threads: this.pool?.threads ?? 0, expectedDiffBytes: this.expectedBytes };
  }

  async ensureFull(hash: string): Promise<TransferInfo> {
    assertSha256Hex(hash, 'hash');
    if (this.host.cluster) await this.host.adoption.adoptBinary(hash).catch(() => undefined);
    return this.singleFlight('full', hash, undefined, undefined, (dirs) => this.dispatch({
      kind: 'full',
      targetPath: this.binaryPath(hash),
      targetHash: hash,
      outDir: dirs.out,
      level: this.host.config.store.fullCompressionLevel,
    }));
  }

  /** Each format of a pair is a file of its own, generated once (single flight per name). */
  async ensureDelta(from: string, to: string, format: DeltaFormat = DEFAULT_DELTA_FORMAT): Promise<TransferInfo> {
    assertSha256Hex(from, 'from');
    assertSha256Hex(to, 'to');
    if (!isDeltaFormat(format)) throw new UpdaterError('INVALID_FIELD', 'format: not a patch format this server knows');
    const { binaries, config } = this.host;
    const existing = this.host.transfers.get(transferName('delta', to, from, format));
    // An existing delta is always served, whatever the size cap says (row 3 of src/shared/decision/decide.ts).
    if (existing) return existing;
    // In a cluster, another replica may have stored a binary this one has not indexed yet.
    if (this.host.cluster) for (const hash of [from, to]) await this.host.adoption.adoptBinary(hash).catch(() => undefined);
    const capBytes = config.store.deltaMaxSourceBytes;
    for (const hash of [from, to]) {
      const size = binaries.get(hash);
      if (size === undefined) throw new UpdaterError('BINARY_NOT_FOUND', `the store holds no binary ${hash}`);
      if (capBytes > 0 && size > capBytes) {
        throw new UpdaterError('DELTA_TOO_LARGE', `binary ${hash} is ${size} bytes, over the store.delta_max_source_mb cap of ${capBytes} bytes`, { hash, size });
      }
    }
    if (format !== DEFAULT_DELTA_FORMAT && config.store.deltaEngine !== 'native') {
      throw new UpdaterError('DIFF_FAILED', `store.delta_engine ${config.store.deltaEngine} writes bsdiff40 only, not ${format}`);
    }
    return this.singleFlight('delta', to, from, format, async (dirs) => {
      const engine = config.store.deltaEngine;
      // Only bsdiff-node verifies against cached target bytes; the native engine streams.
      const targetBytes = engine === 'bsdiff-node' ? await this.host.targetCache.bytesFor(to, this.binaryPath(to), binaries.get(to)!) : undefined;
      const expected = expectedGenerationBytes(engine, binaries.get(from)!, binaries.get(to)!);
      this.expectedBytes += expected;
      try {
        return await this.dispatch({
          kind: 'delta',
          sourcePath: this.binaryPath(from),
          sourceHash: from,
          targetPath: this.binaryPath(to),
          targetHash: to,
          engine,
          ...formatField(format),
          ...(targetBytes ? { targetBytes } : {}),
          outDir: dirs.out,
          workDir: dirs.work,
        });
      } finally {
        this.expectedBytes -= expected;
      }
    });
  }

  /** Whether a generation under way is reading this binary (retention must not remove it). */
  readsBinary(hash: string): boolean {
    for (const name of this.host.inflight.keys()) if (name.includes(hash)) return true;
    return false;
  }

  /** Waits for the generations under way, then stops the pool. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.host.inflight.values()]);
    await this.pool?.destroy();
  }

  private binaryPath(hash: string): string {
    return join(this.host.layout.binaries, binaryName(hash));
  }

  /**
   * One generation per file name, however many callers ask at once; in a cluster, once per
   * name across the replicas. `run` gets the directories its temporaries go to.
   */
  private singleFlight(kind: TransferKind, to: string, from: string | undefined, format: DeltaFormat | undefined,
    run: (dirs: { out: string; work: string }) => Promise<TransferInfo>): Promise<TransferInfo> {
    const { inflight, layout } = this.host;
    const name = transferName(kind, to, from, format);
    const done = this.host.transfers.get(name);
    if (done) return Promise.resolve(done);
    const pending = inflight.get(name);
    if (pending) return pending;
    this.host.refuseWhileDraining();
    if (kind === 'full' && !this.host.binaries.has(to)) {
      return Promise.reject(new UpdaterError('BINARY_NOT_FOUND', `the store holds no binary ${to}`));
    }
    const promise = (this.host.cluster ? this.clusterGeneration(this.host.cluster, name, run) : run({ out: layout.deltas, work: layout.work }))
      .finally(() => inflight.delete(name));
    inflight.set(name, promise);
    return promise;
  }

  /**
   * Cluster mode: the file is generated by one replica, under its lock, in a scratch directory
   * of its own name (`work/gen/{name}`) that a replica taking a dead one's job over clears.
   */
  private clusterGeneration(cluster: ClusterFiles, name: string, run: (dirs: { out: string; work: string }) => Promise<TransferInfo>): Promise<TransferInfo> {
    return cluster.once(name, () => this.host.adoption.findDerived(name), async () => {
      const scratch = join(this.host.layout.work, 'gen', name);
      await rm(scratch, { recursive: true, force: true });
      await mkdir(scratch, { recursive: true });
      try {
        return await run({ out: scratch, work: scratch });
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    });
  }

  private dispatch(task: DiffTask): Promise<TransferInfo> {
    return this.host.writing(task.kind === 'delta' ? 'a delta' : 'a compressed full file', () => this.generate(task));
  }

  private async generate(task: DiffTask): Promise<TransferInfo> {
    const { log, metrics } = this.host;
    const outcome = await this.runTask(task);
    if (!outcome.ok) {
      const err = deserializeError(outcome.error);
      metrics.generationFailed(task.kind, (err as { code?: string }).code);
      log.error({ err, kind: task.kind, target: task.targetHash }, 'derived file generation failed');
      throw err;
    }
    const { tempPath, size, hash, durationMs } = outcome.result;
    const from = task.kind === 'delta' ? task.sourceHash : undefined;
    const format = task.kind === 'delta' ? task.format : undefined;
    const name = transferName(task.kind, task.targetHash, from, format);
    await publishNoOverwrite(tempPath, join(this.host.layout.deltas, name));
    const info: TransferInfo = task.kind === 'delta'
      ? { kind: 'delta', from: task.sourceHash, to: task.targetHash, ...formatField(format), size, hash }
      : { kind: 'full', to: task.targetHash, size, hash };
    this.host.transfers.set(name, info);
    metrics.generated(task.kind, durationMs / 1000);
    log.info({ file: name, size, ms: Math.round(durationMs) }, 'derived file ready');
    void this.host.publish({ type: 'transfer-ready', transfer: info });
    return info;
  }
}

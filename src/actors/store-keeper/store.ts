import { join } from 'node:path';
import type { DiffTask } from '../../messages/diff.js';
import { mkdir, rm } from 'node:fs/promises';
import type { UploadEnd, UploadSlot } from '../../messages/store.js';
import { Uploads } from './adopt.js';
import type { BinaryInfo, RemovalRequest, RemovalResult, StoreCondition, StoreEvent, StoreInventory, StoreSnapshot, TransferInfo, TransferKind, TransferLocation } from '../../messages/store.js';
import type { Config } from '../../shared/config/types.js';
import { publishNoOverwrite, storeWriteError } from '../../shared/durable-file.js';
import { UpdaterError, deserializeError } from '../../shared/errors.js';
import { assertSha256Hex } from '../../shared/hash.js';
import type { Logger } from '../../shared/logger.js';
import type { FileIdentity } from '../../shared/protected-files.js';
import { expectedGenerationBytes, startDiffPool, type DiffPool, type RunDiffTask } from '../diff-pool/pool.js';
import { HotTransferCache, TargetCache } from './caches.js';
import { copyIntoStore } from './copy-in.js';
import { binaryName, parseDerivedName, storeLayout, transferName, type StoreLayout } from '../../shared/store-layout.js';
import { listInventory, unlinkIfPresent } from './removal.js';
import type { StoreMetrics } from './metrics.js';
import { openStoreDirs } from './scan.js';
import type { ClusterFiles, RemovedFiles } from './cluster-files.js';
import { Writability } from './writability.js';
import { Adoption, type StoreEventBody } from './adoption.js';

export type { RunDiffTask };

/** The content-addressed store: the only writer of the store directory. */
export class ContentStore {
  readonly layout: StoreLayout;
  private readonly binaries = new Map<string, number>();
  private readonly transfers = new Map<string, TransferInfo>();
  private readonly inflight = new Map<string, Promise<TransferInfo>>();
  /** Cluster mode: what other replicas wrote or removed in the shared directory (adoption.ts). */
  private readonly adoption: Adoption;
  private readonly targetCache: TargetCache;
  private readonly hotCache: HotTransferCache;
  /** The diff pool; absent when the caller runs diff tasks itself (tests). */
  private readonly pool: DiffPool | undefined;
  private readonly runTask: RunDiffTask;
  private readonly writability: Writability;
  private readonly uploads: Uploads;
  private seq = 0;
  private draining = false;
  /** Sum of the expected memory of the delta generations under way (docs/memory.md). */
  private expectedDiffBytes = 0;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly metrics: StoreMetrics,
    /** Tells the manifester; resolves once it has applied the event (or gave up waiting). */
    private readonly emit: (event: StoreEvent) => Promise<void>,
    /** Runs one diff task; by default on the diff pool's threads. */
    runTask?: RunDiffTask,
    /** Cluster mode: the store directory is shared with other replicas (cluster-files.ts). */
    private readonly cluster?: ClusterFiles,
  ) {
    this.layout = storeLayout(config.store.dir);
    this.writability = new Writability(config.store.dir, log);
    this.uploads = new Uploads(this.layout.binaries, log);
    this.targetCache = new TargetCache(config.store.targetCacheBytes);
    this.hotCache = new HotTransferCache(config.store.hotDeltaCacheBytes);
    this.adoption = new Adoption({
      config, log, layout: this.layout, binaries: this.binaries, transfers: this.transfers, inflight: this.inflight,
      targetCache: this.targetCache, hotCache: this.hotCache, publish: (body) => this.publish(body),
    });
    this.pool = runTask ? undefined : startDiffPool(config.store.deltaConcurrency);
    this.runTask = runTask ?? this.pool!.run;
    metrics.observeBudgets(() => ({
      target: this.targetCache.usedBytes,
      hot: this.hotCache.usedBytes,
      queued: this.pool?.queueSize ?? 0,
      running: this.inflight.size,
      threads: this.pool?.threads ?? 0,
      expectedDiffBytes: this.expectedDiffBytes,
    }));
    metrics.observeStore(() => this.writability.reading);
  }

  async open(): Promise<void> {
    const dir = this.config.store.dir;
    await mkdir(dir, { recursive: true }).catch((err: NodeJS.ErrnoException) => {
      // A store that exists on a read-only or full file system still opens, to serve.
      if (err.code !== 'EROFS' && err.code !== 'ENOSPC' && err.code !== 'EEXIST') throw err;
    });
    const condition = await this.writability.probe().catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      return 'read-only' as const;
    });
    const scanned = await openStoreDirs(dir, this.layout, condition !== 'read-only', this.log, this.cluster !== undefined);
    for (const b of scanned.binaries) this.binaries.set(b.hash, b.size);
    for (const t of scanned.transfers) this.transfers.set(transferName(t.kind, t.to, t.from), t);
    this.log.info({ binaries: this.binaries.size, transfers: this.transfers.size, dir, condition }, 'store opened');
    this.writability.start();
  }

  condition(): StoreCondition {
    return this.writability.condition;
  }

  /**
   * Runs a write to the store: refused at once while the store is full or read-only (probes
   * lift that), and a failure from a full disk or read-only mount turns into its stable code.
   */
  private async writing<T>(what: string, write: () => Promise<T>): Promise<T> {
    this.writability.refuse(what);
    try {
      const result = await write();
      this.writability.succeeded();
      return result;
    } catch (err) {
      const mapped = storeWriteError(err, what);
      this.writability.failed(mapped);
      throw mapped;
    }
  }

  snapshot(): StoreSnapshot {
    return {
      seq: this.seq,
      binaries: [...this.binaries].map(([hash, size]) => ({ hash, size })),
      transfers: [...this.transfers.values()],
    };
  }

  /** Uploads (adopt.ts): the front-end streams into a temporary this store hands out and takes back. */
  beginUpload(): Promise<UploadSlot> {
    this.refuseWhileDraining();
    return this.writing('an upload', () => this.uploads.begin());
  }

  async adoptUpload(id: string, claimed: BinaryInfo): Promise<BinaryInfo & { created: boolean }> {
    const result = await this.writing('an upload', () => this.uploads.adopt(id, claimed, (hash) => this.binaries.has(hash)));
    this.indexBinary(result);
    if (result.created) this.log.info({ hash: result.hash, size: result.size }, 'uploaded binary stored');
    return result;
  }

  abandonUpload(id: string, end: UploadEnd): Promise<void> {
    // The front-end's write met a full disk: the store refuses writes until a probe finds room.
    if (end === 'store-full') this.writability.failed(new UpdaterError('STORE_FULL', 'an upload filled the disk'));
    return this.uploads.abandon(id, end);
  }

  private indexBinary(binary: BinaryInfo): void {
    if (this.binaries.has(binary.hash)) return;
    this.binaries.set(binary.hash, binary.size);
    void this.publish({ type: 'binary-registered', binary: { hash: binary.hash, size: binary.size } });
  }

  async registerBinary(path: string, expected?: FileIdentity): Promise<BinaryInfo> {
    this.refuseWhileDraining();
    const result = await copyIntoStore({ path, expected, config: this.config }, this.layout.binaries, (hash) => this.binaries.has(hash),
      (write) => this.writing(`a copy of ${path}`, write), this.log);
    if (!this.binaries.has(result.hash)) {
      this.binaries.set(result.hash, result.size);
      void this.publish({ type: 'binary-registered', binary: { hash: result.hash, size: result.size } });
    }
    if (result.created) this.log.info({ hash: result.hash, size: result.size, source: path }, 'binary stored');
    return { hash: result.hash, size: result.size };
  }

  /**
   * Cluster mode: indexes a binary another replica stored in the shared directory, once its
   * bytes are checked against its name (adoption.ts). BINARY_NOT_FOUND when it is not there.
   */
  adoptBinary(hash: string): Promise<BinaryInfo> {
    return this.adoption.adoptBinary(hash);
  }

  /** Cluster mode: files another replica's retention sweep removed leave this index too. */
  removedElsewhere(files: RemovedFiles): Promise<void> {
    return this.adoption.removedElsewhere(files);
  }

  async ensureFull(hash: string): Promise<TransferInfo> {
    assertSha256Hex(hash, 'hash');
    if (this.cluster) await this.adoptBinary(hash).catch(() => undefined);
    return this.singleFlight('full', hash, undefined, (dirs) => this.dispatch({
      kind: 'full',
      targetPath: this.binaryPath(hash),
      targetHash: hash,
      outDir: dirs.out,
      level: this.config.store.fullCompressionLevel,
    }));
  }

  async ensureDelta(from: string, to: string): Promise<TransferInfo> {
    assertSha256Hex(from, 'from');
    assertSha256Hex(to, 'to');
    const existing = this.transfers.get(transferName('delta', to, from));
    // An existing delta is always served, whatever the size cap says (row 3 of manifester/decide.ts).
    if (existing) return existing;
    // In a cluster, another replica may have stored a binary this one has not indexed yet.
    if (this.cluster) for (const hash of [from, to]) await this.adoptBinary(hash).catch(() => undefined);
    const capBytes = this.config.store.deltaMaxSourceBytes;
    for (const hash of [from, to]) {
      const size = this.binaries.get(hash);
      if (size === undefined) throw new UpdaterError('BINARY_NOT_FOUND', `the store holds no binary ${hash}`);
      if (capBytes > 0 && size > capBytes) {
        throw new UpdaterError('DELTA_TOO_LARGE', `binary ${hash} is ${size} bytes, over the store.delta_max_source_mb cap of ${capBytes} bytes`, { hash, size });
      }
    }
    return this.singleFlight('delta', to, from, async (dirs) => {
      const engine = this.config.store.deltaEngine;
      // Only bsdiff-node verifies against cached target bytes; the native engine streams.
      const targetBytes = engine === 'bsdiff-node' ? await this.targetCache.bytesFor(to, this.binaryPath(to), this.binaries.get(to)!) : undefined;
      const expected = expectedGenerationBytes(engine, this.binaries.get(from)!, this.binaries.get(to)!);
      this.expectedDiffBytes += expected;
      try {
        return await this.dispatch({
          kind: 'delta',
          sourcePath: this.binaryPath(from),
          sourceHash: from,
          targetPath: this.binaryPath(to),
          targetHash: to,
          engine,
          ...(targetBytes ? { targetBytes } : {}),
          outDir: dirs.out,
          workDir: dirs.work,
        });
      } finally {
        this.expectedDiffBytes -= expected;
      }
    });
  }

  async locate(kind: TransferKind, to: string, from?: string): Promise<TransferLocation | null> {
    assertSha256Hex(to, 'to');
    if (kind === 'delta') assertSha256Hex(from, 'from');
    const name = transferName(kind, to, from);
    // In a cluster, a device may download from this replica a file another replica generated
    // moments ago (the load balancer sent its heartbeat there): it is adopted from the shared
    // store on the spot rather than answered 404 until an announcement arrives.
    const info = this.transfers.get(name) ?? (this.cluster ? await this.adoption.adoptDerived(name) : undefined);
    if (!info) return null;
    const path = join(this.layout.deltas, name);
    const shared = this.hotCache.get(name);
    if (!shared) this.hotCache.warm(name, path, info.size, (err) => this.log.warn({ err, file: name }, 'could not load a file into the hot cache'));
    return { ...info, path, ...(shared ? { shared } : {}) };
  }

  inventory(): Promise<StoreInventory> {
    return listInventory(this.layout);
  }

  async remove(request: RemovalRequest): Promise<RemovalResult> {
    const result = { deltas: 0, full: 0, binaries: 0, bytes: 0 };
    for (const name of request.derived) {
      const parsed = parseDerivedName(name);
      if (!parsed || this.inflight.has(name)) continue;
      const info = this.transfers.get(name);
      if (info) {
        this.transfers.delete(name);
        this.hotCache.drop(name);
        // The manifester stops promising the file before its bytes go.
        await this.publish({ type: 'transfer-removed', transfer: info });
      }
      const bytes = await unlinkIfPresent(join(this.layout.deltas, name));
      result.bytes += bytes;
      if (parsed.kind === 'delta') result.deltas++;
      else result.full++;
    }
    const binaries: string[] = [];
    for (const hash of request.binaries) {
      assertSha256Hex(hash, 'hash');
      if (this.readByDiffUnderWay(hash)) continue;
      if (this.binaries.delete(hash)) {
        this.targetCache.drop(hash);
        await this.publish({ type: 'binary-removed', hash });
      }
      result.bytes += await unlinkIfPresent(this.binaryPath(hash));
      result.binaries++;
      binaries.push(hash);
    }
    await this.cluster?.announceRemoval({ derived: request.derived.filter((name) => !this.inflight.has(name) && parseDerivedName(name)), binaries });
    return result;
  }

  private readByDiffUnderWay(hash: string): boolean {
    for (const name of this.inflight.keys()) if (name.includes(hash)) return true;
    return false;
  }

  async drain(): Promise<void> {
    this.draining = true;
    await Promise.allSettled([...this.inflight.values()]);
    await this.pool?.destroy();
    await this.cluster?.close();
    await this.uploads.close();
    this.writability.close();
  }

  private binaryPath(hash: string): string {
    return join(this.layout.binaries, binaryName(hash));
  }

  private refuseWhileDraining(): void {
    if (this.draining) throw new UpdaterError('SHUTTING_DOWN');
  }

  /**
   * One generation per file name, however many callers ask at once; in a cluster, once per
   * name across the replicas. `run` gets the directories its temporaries go to.
   */
  private singleFlight(kind: TransferKind, to: string, from: string | undefined, run: (dirs: { out: string; work: string }) => Promise<TransferInfo>): Promise<TransferInfo> {
    const name = transferName(kind, to, from);
    const done = this.transfers.get(name);
    if (done) return Promise.resolve(done);
    const pending = this.inflight.get(name);
    if (pending) return pending;
    this.refuseWhileDraining();
    if (kind === 'full' && !this.binaries.has(to)) {
      return Promise.reject(new UpdaterError('BINARY_NOT_FOUND', `the store holds no binary ${to}`));
    }
    const promise = (this.cluster ? this.clusterGeneration(name, run) : run({ out: this.layout.deltas, work: this.layout.work }))
      .finally(() => this.inflight.delete(name));
    this.inflight.set(name, promise);
    return promise;
  }

  /**
   * Cluster mode: the file is generated by one replica, under its lock, in a scratch directory
   * of its own name (`work/gen/{name}`) that a replica taking a dead one's job over clears.
   */
  private clusterGeneration(name: string, run: (dirs: { out: string; work: string }) => Promise<TransferInfo>): Promise<TransferInfo> {
    return this.cluster!.once(name, () => this.adoption.findDerived(name), async () => {
      const scratch = join(this.layout.work, 'gen', name);
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
    return this.writing(task.kind === 'delta' ? 'a delta' : 'a compressed full file', () => this.generate(task));
  }

  private async generate(task: DiffTask): Promise<TransferInfo> {
    const outcome = await this.runTask(task);
    if (!outcome.ok) {
      const err = deserializeError(outcome.error);
      this.metrics.generationFailed(task.kind, (err as { code?: string }).code);
      this.log.error({ err, kind: task.kind, target: task.targetHash }, 'derived file generation failed');
      throw err;
    }
    const { tempPath, size, hash, durationMs } = outcome.result;
    const from = task.kind === 'delta' ? task.sourceHash : undefined;
    const name = transferName(task.kind, task.targetHash, from);
    await publishNoOverwrite(tempPath, join(this.layout.deltas, name));
    const info: TransferInfo = task.kind === 'delta'
      ? { kind: 'delta', from: task.sourceHash, to: task.targetHash, size, hash }
      : { kind: 'full', to: task.targetHash, size, hash };
    this.transfers.set(name, info);
    this.metrics.generated(task.kind, durationMs / 1000);
    this.log.info({ file: name, size, ms: Math.round(durationMs) }, 'derived file ready');
    void this.publish({ type: 'transfer-ready', transfer: info });
    return info;
  }

  private publish(body: StoreEventBody): Promise<void> {
    return this.emit({ ...body, seq: ++this.seq } as StoreEvent);
  }
}

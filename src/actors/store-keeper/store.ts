import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import type { UploadEnd, UploadSlot } from '../../messages/store.js';
import { Uploads } from './uploads.js';
import type { BinaryInfo, RemovalRequest, RemovalResult, StoreCondition, StoreEvent, StoreInventory, StoreSnapshot, TransferInfo, TransferKind, TransferLocation } from '../../messages/store.js';
import type { Config } from '../../shared/config/types.js';
import { isDeltaFormat, type DeltaFormat } from '../../shared/delta-formats.js';
import { storeWriteError } from '../../shared/durable-file.js';
import { UpdaterError } from '../../shared/errors.js';
import { assertSha256Hex } from '../../shared/hash.js';
import type { Logger } from '../../shared/logger.js';
import type { FileIdentity } from '../../shared/protected-files.js';
import type { RunDiffTask } from '../diff-pool/pool.js';
import { HotTransferCache, TargetCache } from './caches.js';
import { copyIntoStore } from './copy-in.js';
import { binaryName, parseDerivedName, storeLayout, transferName, type StoreLayout } from '../../shared/store-layout.js';
import { listInventory, unlinkIfPresent } from './removal.js';
import type { StoreMetrics } from './metrics.js';
import { openStoreDirs } from './scan.js';
import type { ClusterFiles, RemovedFiles } from './cluster-files.js';
import { Writability } from './writability.js';
import { Adoption, type StoreEventBody } from './cluster-adoption.js';
import { DerivedFiles } from './derived-files.js';

export type { RunDiffTask };

/** The content-addressed store: the only writer of the store directory. */
export class ContentStore {
  readonly layout: StoreLayout;
  private readonly binaries = new Map<string, number>();
  private readonly transfers = new Map<string, TransferInfo>();
  private readonly inflight = new Map<string, Promise<TransferInfo>>();
  /** Cluster mode: what other replicas wrote or removed in the shared directory (cluster-adoption.ts). */
  private readonly adoption: Adoption;
  private readonly targetCache: TargetCache;
  private readonly hotCache: HotTransferCache;
  /** Deltas and compressed full files, generated on the diff pool (derived-files.ts). */
  private readonly derived: DerivedFiles;
  private readonly writability: Writability;
  private readonly uploads: Uploads;
  private seq = 0;
  private draining = false;

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
    this.derived = new DerivedFiles({
      config, log, metrics, layout: this.layout, binaries: this.binaries, transfers: this.transfers, inflight: this.inflight,
      targetCache: this.targetCache, adoption: this.adoption, cluster,
      writing: (what, write) => this.writing(what, write),
      publish: (body) => this.publish(body),
      refuseWhileDraining: () => this.refuseWhileDraining(),
    }, runTask);
    metrics.observeBudgets(() => ({ target: this.targetCache.usedBytes, hot: this.hotCache.usedBytes, ...this.derived.budgets() }));
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
    for (const t of scanned.transfers) this.transfers.set(transferName(t.kind, t.to, t.from, t.format), t);
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
    const started = this.writability.writeStarted();
    try {
      const result = await write();
      this.writability.succeeded(started);
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

  /** Uploads (uploads.ts): the front-end streams into a temporary this store hands out and takes back. */
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
   * bytes are checked against its name (cluster-adoption.ts). BINARY_NOT_FOUND when it is not there.
   */
  adoptBinary(hash: string): Promise<BinaryInfo> {
    return this.adoption.adoptBinary(hash);
  }

  /** Cluster mode: files another replica's retention sweep removed leave this index too. */
  removedElsewhere(files: RemovedFiles): Promise<void> {
    return this.adoption.removedElsewhere(files);
  }

  ensureFull(hash: string): Promise<TransferInfo> {
    return this.derived.ensureFull(hash);
  }

  ensureDelta(from: string, to: string, format?: DeltaFormat): Promise<TransferInfo> {
    return this.derived.ensureDelta(from, to, format);
  }

  async locate(kind: TransferKind, to: string, from?: string, format?: DeltaFormat): Promise<TransferLocation | null> {
    assertSha256Hex(to, 'to');
    if (kind === 'delta') assertSha256Hex(from, 'from');
    if (format !== undefined && !isDeltaFormat(format)) throw new UpdaterError('INVALID_FIELD', 'format: not a patch format this server knows');
    const name = transferName(kind, to, from, format);
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
      if (this.derived.readsBinary(hash)) continue;
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

  async drain(): Promise<void> {
    this.draining = true;
    await this.derived.drain();
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

  private publish(body: StoreEventBody): Promise<void> {
    return this.emit({ ...body, seq: ++this.seq } as StoreEvent);
  }
}

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BinaryInfo, StoreEvent, TransferInfo } from '../../messages/store.js';
import type { Config } from '../../shared/config/types.js';
import { formatField } from '../../shared/delta-formats.js';
import { UpdaterError } from '../../shared/errors.js';
import { assertSha256Hex } from '../../shared/hash.js';
import type { Logger } from '../../shared/logger.js';
import { binaryName, parseDerivedName, type StoreLayout } from '../../shared/store-layout.js';
import type { HotTransferCache, TargetCache } from './caches.js';
import type { RemovedFiles } from './cluster-files.js';
import { binaryMismatch, derivedCheck, quarantine } from './verify.js';

// Cluster mode: the store directory is shared, so files another replica wrote (or removed)
// enter (or leave) this replica's index here, each only once its bytes are checked against
// its name. On a single node nothing calls this.

export type StoreEventBody = StoreEvent extends infer E ? (E extends StoreEvent ? Omit<E, 'seq'> : never) : never;

/** The parts of the store's index an adoption reads and changes (store.ts owns them). */
export interface IndexedStore {
  readonly config: Config;
  readonly log: Logger;
  readonly layout: StoreLayout;
  readonly binaries: Map<string, number>;
  readonly transfers: Map<string, TransferInfo>;
  /** Generations under way, by file name: never dropped from the index underneath them. */
  readonly inflight: ReadonlyMap<string, Promise<TransferInfo>>;
  readonly targetCache: TargetCache;
  readonly hotCache: HotTransferCache;
  publish(body: StoreEventBody): Promise<void>;
}

export class Adoption {
  /** Derived files of other replicas being checked before they are indexed here. */
  private readonly adoptions = new Map<string, Promise<TransferInfo | undefined>>();

  constructor(private readonly store: IndexedStore) {}

  /**
   * Cluster mode: indexes a binary another replica stored in the shared directory, once its
   * bytes are checked against its name. BINARY_NOT_FOUND when it is not there (or does not fit).
   */
  async adoptBinary(hash: string): Promise<BinaryInfo> {
    assertSha256Hex(hash, 'hash');
    const known = this.store.binaries.get(hash);
    if (known !== undefined) return { hash, size: known };
    const path = this.binaryPath(hash);
    const size = await stat(path).then((s) => (s.isFile() ? s.size : undefined), () => undefined);
    if (size === undefined || (await binaryMismatch(path, hash)) !== undefined) {
      throw new UpdaterError('BINARY_NOT_FOUND', `the store holds no binary ${hash}`);
    }
    if (!this.store.binaries.has(hash)) {
      this.store.binaries.set(hash, size);
      void this.store.publish({ type: 'binary-registered', binary: { hash, size } });
    }
    return { hash, size };
  }

  /** Cluster mode: files another replica's retention sweep removed leave this index too. */
  async removedElsewhere(files: RemovedFiles): Promise<void> {
    for (const name of files.derived) {
      const info = this.store.transfers.get(name);
      if (!info || this.store.inflight.has(name)) continue;
      if (await stat(join(this.store.layout.deltas, name)).then(() => true, () => false)) continue;
      this.store.transfers.delete(name);
      this.store.hotCache.drop(name);
      await this.store.publish({ type: 'transfer-removed', transfer: info });
    }
    for (const hash of files.binaries) {
      if (!this.store.binaries.has(hash) || (await stat(this.binaryPath(hash)).then(() => true, () => false))) continue;
      this.store.binaries.delete(hash);
      this.store.targetCache.drop(hash);
      await this.store.publish({ type: 'binary-removed', hash });
    }
  }

  /** A derived file on the shared disk, indexed once its bytes fit its name; one adoption per name at a time, however many downloads ask for it at once. */
  adoptDerived(name: string): Promise<TransferInfo | undefined> {
    let pending = this.adoptions.get(name);
    if (!pending) {
      pending = this.findDerived(name).finally(() => this.adoptions.delete(name));
      this.adoptions.set(name, pending);
    }
    return pending;
  }

  /** The file's entry, indexed first if it is on the shared disk and its bytes fit its name. */
  async findDerived(name: string): Promise<TransferInfo | undefined> {
    const done = this.store.transfers.get(name);
    if (done) return done;
    const parsed = parseDerivedName(name);
    const path = join(this.store.layout.deltas, name);
    if (!parsed || !(await stat(path).then((s) => s.isFile(), () => false))) return undefined;
    const checked = await derivedCheck(path, parsed, this.store.binaries.get(parsed.to));
    if ('mismatch' in checked) {
      await quarantine(this.store.config.store.dir, this.store.layout.deltas, name, checked.mismatch, this.store.log);
      return undefined;
    }
    const info: TransferInfo = parsed.kind === 'delta'
      ? { kind: 'delta', from: parsed.from, to: parsed.to, ...formatField(parsed.format), ...checked }
      : { kind: 'full', to: parsed.to, ...checked };
    this.store.transfers.set(name, info);
    this.store.log.info({ file: name, size: info.size }, 'derived file generated by another replica indexed');
    void this.store.publish({ type: 'transfer-ready', transfer: info });
    return info;
  }

  private binaryPath(hash: string): string {
    return join(this.store.layout.binaries, binaryName(hash));
  }
}

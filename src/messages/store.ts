import type { DeltaFormat } from '../shared/delta-formats.js';
import type { FileIdentity } from '../shared/protected-files.js';
import type { TransferKind } from '../shared/store-layout.js';
import { CONTROL_DEADLINES_MS, type ControlApi, type Deadlines } from './lifecycle.js';

export type { TransferKind };

/** A finished, verified derived file: `{from}_{to}.delta.zst` (or `.delta.bsdiff-lzma`) or `{to}.full.zst`. */
export interface TransferInfo {
  readonly kind: TransferKind;
  /** Source hash, deltas only. */
  readonly from?: string;
  /** A delta's patch format; absent for bsdiff40 (src/shared/delta-formats.ts). */
  readonly format?: DeltaFormat;
  readonly to: string;
  /** Size of the bytes on the wire. */
  readonly size: number;
  /** SHA-256 of the bytes on the wire (the manifest's delta_hash). */
  readonly hash: string;
}

/** Whether the store takes writes; `/health` reports it. */
export type StoreCondition = 'writable' | 'full' | 'read-only';

export interface BinaryInfo {
  readonly hash: string;
  readonly size: number;
}

/** Where a front-end finds the bytes of a transfer. Bytes never travel through messages. */
export interface TransferLocation extends TransferInfo {
  readonly path: string;
  /** Present when the hot transfer cache holds the whole file. */
  readonly shared?: SharedArrayBuffer;
}

export type StoreEvent =
  | { seq: number; type: 'binary-registered'; binary: BinaryInfo }
  | { seq: number; type: 'transfer-ready'; transfer: TransferInfo }
  | { seq: number; type: 'transfer-removed'; transfer: TransferInfo }
  | { seq: number; type: 'binary-removed'; hash: string };

export interface StoreSnapshot {
  readonly seq: number;
  readonly binaries: readonly BinaryInfo[];
  readonly transfers: readonly TransferInfo[];
}

/** A file of the store as the retention sweeper sees it. */
export interface InventoryEntry {
  readonly name: string;
  readonly size: number;
  readonly mtimeMs: number;
}

export interface StoreInventory {
  /** Every regular file of the deltas directory, derived-file name or not. */
  readonly derived: readonly InventoryEntry[];
  readonly binaries: readonly (InventoryEntry & { hash: string })[];
}

export interface RemovalRequest {
  /** Derived-file names (`{from}_{to}.delta.zst`, `{hash}.full.zst`). */
  readonly derived: readonly string[];
  readonly binaries: readonly string[];
}

export interface RemovalResult {
  readonly deltas: number;
  readonly full: number;
  readonly binaries: number;
  readonly bytes: number;
}

/** A temporary in the binaries directory that the HTTP front-end streams an upload into. */
export interface UploadSlot {
  readonly id: string;
  readonly path: string;
}

/** Why an upload ends without being adopted. */
export type UploadEnd = 'aborted' | 'hash-mismatch' | 'too-large' | 'store-full' | 'failed';

export interface StoreKeeperApi extends ControlApi {
  /**
   * Streams a server-side file into the store as `{hash}.bin`; durable when it resolves.
   * PUBLISH_PATH_FORBIDDEN when the file opened is one the server protects, or is not the
   * file `expected` (device and inode) that the manifester's publish check passed.
   */
  registerBinary(path: string, expected?: FileIdentity): Promise<BinaryInfo>;
  /** Ensures `{hash}.full.zst` exists (single-flight per hash). */
  ensureFull(hash: string): Promise<TransferInfo>;
  /**
   * Ensures the pair's delta of `format` (bsdiff40 unless given) exists, single-flight per
   * (pair, format). Rejects with DELTA_TOO_LARGE when a binary exceeds `store.delta_max_source_mb`.
   */
  ensureDelta(from: string, to: string, format?: DeltaFormat): Promise<TransferInfo>;
  /** Cluster mode: indexes `{hash}.bin` that another replica stored in the shared directory. */
  adoptBinary(hash: string): Promise<BinaryInfo>;
  snapshot(): Promise<StoreSnapshot>;
  /** Whether the store takes writes now (a full or read-only store still serves). */
  condition(): Promise<StoreCondition>;
  locate(kind: TransferKind, to: string, from?: string, format?: DeltaFormat): Promise<TransferLocation | null>;
  /** Lists the store's files with sizes and modification times. */
  inventory(): Promise<StoreInventory>;
  /**
   * Deletes files on the sweeper's behalf: each leaves the index and the manifester's view
   * before its bytes go, so nothing is promised that no longer exists. Binaries that a diff
   * under way reads are skipped.
   */
  remove(request: RemovalRequest): Promise<RemovalResult>;
  /** Uploads: a new temporary for the front-end to stream into (STORE_FULL / STORE_READ_ONLY at once when the store takes no writes). */
  beginUpload(): Promise<UploadSlot>;
  /** Reads the synced temporary back, checks it against `claimed`, names it `{hash}.bin` and indexes it; `created` false when already held. */
  adoptUpload(id: string, claimed: BinaryInfo): Promise<BinaryInfo & { created: boolean }>;
  /** Removes an upload's temporary; `store-full` also marks the store full until a probe finds space. */
  abandonUpload(id: string, end: UploadEnd): Promise<void>;
}

export const STORE_KEEPER_DEADLINES_MS = {
  ...CONTROL_DEADLINES_MS,
  /** Registering a binary streams it into the store; large images take a while. */
  registerBinary: 10 * 60_000,
  /** A generation can take minutes; this only bounds how long a lost request is remembered. */
  ensureFull: 60 * 60_000,
  ensureDelta: 60 * 60_000,
  /** Checks a whole binary's hash before it is indexed. */
  adoptBinary: 10 * 60_000,
  snapshot: 60_000,
  /** Asked by GET /health, which a load balancer polls. */
  condition: 5_000,
  /** On a download's path. */
  locate: 5_000,
  /** The sweeper's calls list or delete many files. */
  inventory: 5 * 60_000,
  remove: 5 * 60_000,
  beginUpload: 10_000,
  /** Reads the whole upload back before it is named. */
  adoptUpload: 10 * 60_000,
  abandonUpload: 10_000,
} as const satisfies Deadlines<StoreKeeperApi>;

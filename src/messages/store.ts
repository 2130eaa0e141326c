import type { ControlApi } from './lifecycle.js';

export type TransferKind = 'delta' | 'full';

/** A finished, verified derived file: `{from}_{to}.delta.zst` or `{to}.full.zst`. */
export interface TransferInfo {
  readonly kind: TransferKind;
  /** Source hash, deltas only. */
  readonly from?: string;
  readonly to: string;
  /** Size of the bytes on the wire. */
  readonly size: number;
  /** SHA-256 of the bytes on the wire (the manifest's delta_hash). */
  readonly hash: string;
}

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

export interface StoreKeeperApi extends ControlApi {
  /** Streams a server-side file into the store as `{hash}.bin`; durable when it resolves. */
  registerBinary(path: string): Promise<BinaryInfo>;
  /** Ensures `{hash}.full.zst` exists (single-flight per hash). */
  ensureFull(hash: string): Promise<TransferInfo>;
  /**
   * Ensures `{from}_{to}.delta.zst` exists (single-flight per pair). Rejects with
   * DELTA_TOO_LARGE when a binary exceeds `store.delta_max_source_mb`.
   */
  ensureDelta(from: string, to: string): Promise<TransferInfo>;
  snapshot(): Promise<StoreSnapshot>;
  locate(kind: TransferKind, to: string, from?: string): Promise<TransferLocation | null>;
}

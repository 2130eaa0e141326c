import type { BinaryInfo } from '../../messages/store.js';
import type { FileIdentity } from '../../shared/protected-files.js';
import { isUpdaterError } from '../../shared/errors.js';

// What the track lifecycle needs of the store-keeper (track-admin.ts, track-boot.ts and the
// cluster boot), and the one test of a refusal by a full or read-only store that each of them
// and the generation requests apply the same way.

export interface StoreAccess {
  /** Streams the file into the store; durable when it resolves. `expected`: the file a publish check passed. */
  registerBinary(path: string, expected?: FileIdentity): Promise<BinaryInfo>;
  /** Asks for the compressed full file in the background. */
  ensureFull(hash: string): void;
  /** Whether the store (as the manifester's replica knows it) holds the binary. */
  holdsBinary(hash: string): boolean;
  /** Cluster mode: has the store index a binary another replica wrote (in the background). */
  adoptInBackground(hash: string): void;
  /** A binary the store holds (an upload, on any replica), checked and indexed; BINARY_NOT_FOUND otherwise. */
  storedBinary(hash: string): Promise<BinaryInfo>;
}

/** A write refused because the disk is full or read-only (as opposed to a bad request). */
export function storeCannotWrite(err: unknown): boolean {
  return isUpdaterError(err) && (err.code === 'STORE_FULL' || err.code === 'STORE_READ_ONLY');
}

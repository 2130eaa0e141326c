import type { SerializedError } from '../shared/errors.js';
import type { ControlApi } from './lifecycle.js';
import type { StoreEvent } from './store.js';

/** What a front-end extracts from a validated heartbeat. */
export interface HeartbeatRequest {
  readonly deviceId: string;
  readonly versionHash: string;
  /** Empty means the default track. */
  readonly artifact: string;
}

/** ManifestResponse with the JSON keys of interface.md; optional keys are left out when empty. */
export interface Manifest {
  update_available: boolean;
  target_version: string;
  target_hash: string;
  target_size: number;
  delta_size: number;
  delta_hash: string;
  chunk_size: number;
  total_chunks: number;
  signature?: string;
  delta_endpoint?: string;
  binary_endpoint?: string;
  retry_after?: number;
  artifact: string;
}

export interface HealthView {
  status: 'ok';
  artifacts: Record<string, { version: string; hash: string }>;
}

/** One answer of a batch: the manifest, or the error `heartbeat` would have thrown. */
export type HeartbeatOutcome = { readonly manifest: Manifest } | { readonly error: SerializedError };

export interface ManifesterApi extends ControlApi {
  heartbeat(request: HeartbeatRequest): Promise<Manifest>;
  /**
   * Several heartbeats in one message, answered in order. A front-end under load batches the
   * heartbeats that arrived together: one cross-thread message costs more than a decision.
   */
  heartbeats(requests: readonly HeartbeatRequest[]): Promise<HeartbeatOutcome[]>;
  health(): Promise<HealthView>;
  /** Called by the store-keeper for every change to the store index. */
  storeEvent(event: StoreEvent): void;
}

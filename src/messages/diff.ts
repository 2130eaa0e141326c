import type { DeltaEngine } from '../shared/config/types.js';
import type { DeltaFormat } from '../shared/delta-formats.js';
import type { SerializedError } from '../shared/errors.js';

// Tasks for the Piscina diff pool. A task writes one finished temporary file and reports it;
// the store-keeper alone moves it into place, so it stays the only writer of the store.

export type DiffTask =
  | {
      readonly kind: 'delta';
      readonly sourcePath: string;
      readonly sourceHash: string;
      readonly targetPath: string;
      readonly targetHash: string;
      readonly engine: DeltaEngine;
      /** The patch format; bsdiff40 (zstd-compressed) when absent, bsdiff-lzma served as written. */
      readonly format?: DeltaFormat;
      /** Verified target bytes from the target cache, when it holds them (bsdiff-node only). */
      readonly targetBytes?: SharedArrayBuffer;
      readonly outDir: string;
      readonly workDir: string;
    }
  | {
      readonly kind: 'full';
      readonly targetPath: string;
      readonly targetHash: string;
      readonly outDir: string;
      readonly level: number;
    };

export interface DiffResult {
  /** The finished temporary in `outDir`, fsynced. */
  readonly tempPath: string;
  readonly size: number;
  readonly hash: string;
  readonly durationMs: number;
}

export type DiffOutcome = { readonly ok: true; readonly result: DiffResult } | { readonly ok: false; readonly error: SerializedError };

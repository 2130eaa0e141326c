import type { DeltaFormat } from '../delta-formats.js';

// The manifest decision, rows 1-7 below, evaluated in order; what each answer means to a
// device is docs/protocol.md, "What a manifest means". Pure: the caller supplies what the
// store holds and turns the decision into a response. Shared: the manifester decides with
// it, and so does every front-end from the manifester's snapshot. `D` is how the caller
// describes a finished transfer (the store's TransferInfo).

export interface TargetView {
  readonly hash: string;
  readonly size: number;
}

export interface StoreQuery<D> {
  binarySize(hash: string): number | undefined;
  delta(from: string, to: string, format?: DeltaFormat): D | undefined;
  full(to: string): D | undefined;
}

export interface DecisionInput<D> {
  /** The resolved track's current target; undefined when the artifact cannot be resolved. */
  readonly target: TargetView | undefined;
  readonly versionHash: string;
  readonly store: StoreQuery<D>;
  /** `store.delta_max_source_mb` in bytes; 0 disables the cap. */
  readonly capBytes: number;
  readonly allowFullDownload: boolean;
  /** The patch format chosen for this device (manifester.ts); bsdiff40 when absent. */
  readonly format?: DeltaFormat;
}

export type Decision<D> =
  | { readonly row: 1; readonly action: 'unknown-artifact' }
  | { readonly row: 2; readonly action: 'up-to-date' }
  | { readonly row: 3; readonly action: 'serve-delta'; readonly delta: D }
  | { readonly row: 4; readonly action: 'generate-delta' }
  | { readonly row: 5; readonly action: 'serve-full'; readonly oversize: { hash: string; size: number } }
  | { readonly row: 6; readonly action: 'serve-full' }
  | { readonly row: 7; readonly action: 'stranded' };

export function decide<D>(input: DecisionInput<D>): Decision<D> {
  const { target, versionHash, store, capBytes } = input;
  if (!target) return { row: 1, action: 'unknown-artifact' };
  if (versionHash === target.hash) return { row: 2, action: 'up-to-date' };
  const sourceSize = store.binarySize(versionHash);
  if (sourceSize !== undefined) {
    const delta = store.delta(versionHash, target.hash, input.format);
    if (delta) return { row: 3, action: 'serve-delta', delta };
    const oversize = capBytes > 0 ? [{ hash: versionHash, size: sourceSize }, { hash: target.hash, size: target.size }].find((b) => b.size > capBytes) : undefined;
    if (!oversize) return { row: 4, action: 'generate-delta' };
    return { row: 5, action: 'serve-full', oversize };
  }
  if (input.allowFullDownload) return { row: 6, action: 'serve-full' };
  return { row: 7, action: 'stranded' };
}

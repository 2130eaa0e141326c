import { join } from 'node:path';
import { DEFAULT_DELTA_FORMAT, type DeltaFormat } from './delta-formats.js';

// File names of the content-addressed store (docs/architecture.md, "Files"). Every name is derived from hashes
// that were validated first, so no outside text ever becomes part of a path. The store-keeper
// writes these names; the sweeper's policy reads them.

const HEX = '[0-9a-f]{64}';
// A BSDIFF40 delta is zstd-compressed (.delta.zst); another format is stored as served.
const DELTA_NAME = new RegExp(`^(${HEX})_(${HEX})\\.delta\\.(zst|bsdiff-lzma)$`);
const FULL_NAME = new RegExp(`^(${HEX})\\.full\\.zst$`);
const BINARY_NAME = new RegExp(`^(${HEX})\\.bin$`);

/** The two kinds of derived file (src/messages/store.ts re-exports this). */
export type TransferKind = 'delta' | 'full';

export interface StoreLayout {
  readonly binaries: string;
  readonly deltas: string;
  /** Scratch space of the diff pool (uncompressed patches, verification output). */
  readonly work: string;
}

export function storeLayout(dir: string): StoreLayout {
  return { binaries: join(dir, 'binaries'), deltas: join(dir, 'deltas'), work: join(dir, 'work') };
}

export function binaryName(hash: string): string {
  return `${hash}.bin`;
}

/** A derived file's name, which is also the transfer's key in maps. */
export function transferName(kind: TransferKind, to: string, from?: string, format: DeltaFormat = DEFAULT_DELTA_FORMAT): string {
  if (kind === 'full') return `${to}.full.zst`;
  return format === DEFAULT_DELTA_FORMAT ? `${from}_${to}.delta.zst` : `${from}_${to}.delta.${format}`;
}

export type ParsedDerivedName = { kind: 'delta'; from: string; to: string; format: DeltaFormat } | { kind: 'full'; to: string };

/** Parses a derived-file name; undefined for anything else (left alone by every sweep). */
export function parseDerivedName(name: string): ParsedDerivedName | undefined {
  const delta = DELTA_NAME.exec(name);
  if (delta) return { kind: 'delta', from: delta[1]!, to: delta[2]!, format: delta[3] === 'zst' ? DEFAULT_DELTA_FORMAT : 'bsdiff-lzma' };
  const full = FULL_NAME.exec(name);
  if (full) return { kind: 'full', to: full[1]! };
  return undefined;
}

export function parseBinaryName(name: string): string | undefined {
  return BINARY_NAME.exec(name)?.[1];
}

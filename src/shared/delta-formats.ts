// The patch formats a delta can come in (docs/protocol.md, "Patch formats"): BSDIFF40
// compressed as a whole with zstd, what every device gets unless it names something else, and
// bsdiff-lzma, the same bsdiff search with its streams coded tighter and compressed by xz,
// served as it is. Shared by the server (store names, negotiation) and the agent.

import { UpdaterError } from './errors.js';

export const DELTA_FORMATS = ['bsdiff40', 'bsdiff-lzma'] as const;
export type DeltaFormat = (typeof DELTA_FORMATS)[number];
export const DEFAULT_DELTA_FORMAT: DeltaFormat = 'bsdiff40';

/** Most formats a heartbeat may name, and the longest name: a list, not a payload. */
export const MAX_NAMED_FORMATS = 8;
export const MAX_FORMAT_NAME = 32;

/** The format segment of a delta's path (`/delta/{from}/{to}/{format}`); absent means bsdiff40. */
export function patchFormatSegment(segment: string | undefined): DeltaFormat | undefined {
  if (segment === undefined) return undefined;
  if (!isDeltaFormat(segment)) throw new UpdaterError('INVALID_FIELD', 'format: not a patch format this server serves', { field: 'format' });
  return segment;
}

export function isDeltaFormat(value: unknown): value is DeltaFormat {
  return (DELTA_FORMATS as readonly unknown[]).includes(value);
}

/** The format field of a delta's description: absent for bsdiff40, so today's values stay as they were. */
export function formatField(format: DeltaFormat | undefined): { format?: DeltaFormat } {
  return format === undefined || format === DEFAULT_DELTA_FORMAT ? {} : { format };
}

/** The first format of the device's list that the server offers; bsdiff40 when none is. */
export function chooseFormat(named: readonly string[] | undefined, offered: readonly DeltaFormat[]): DeltaFormat {
  for (const name of named ?? []) {
    const format = offered.find((f) => f === name);
    if (format) return format;
  }
  return DEFAULT_DELTA_FORMAT;
}

/** The patch formats a server offers, by `store.delta_engine`: bsdiff-node writes BSDIFF40 only. */
export function formatsOffered(engine: 'native' | 'bsdiff-node'): readonly DeltaFormat[] {
  return engine === 'native' ? DELTA_FORMATS : [DEFAULT_DELTA_FORMAT];
}

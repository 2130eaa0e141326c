// HTTP Range (RFC 9110 §14) for a single byte range, the form download agents use to resume.

export type RangeResult =
  | { kind: 'full' }
  | { kind: 'partial'; start: number; end: number }
  | { kind: 'unsatisfiable' };

/**
 * `header` is the raw Range value ('' when absent). Several ranges or another unit are
 * answered with the whole body, which the RFC allows; a syntactically valid range that
 * selects nothing is unsatisfiable (416).
 */
export function parseRange(header: string, size: number): RangeResult {
  if (header === '') return { kind: 'full' };
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return { kind: 'full' };
  const [, first, last] = match as unknown as [string, string, string];
  if (first === '' && last === '') return { kind: 'full' };
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (!Number.isSafeInteger(start) || start >= size) return { kind: 'unsatisfiable' };
  let end = last === '' ? size - 1 : Number(last);
  if (!Number.isSafeInteger(end) || end < start) return { kind: 'full' };
  end = Math.min(end, size - 1);
  return { kind: 'partial', start, end };
}

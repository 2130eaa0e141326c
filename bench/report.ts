// What every suite hands back to bench/run.ts, and the final summary table.
//
// A suite returns a plain record (the CoAP and agent suites are written elsewhere and only
// promise `Record<string, unknown>`). Rows for the summary travel under the key `ratios`;
// a foreign record without that key still contributes its numeric `*ratio*` entries, shown
// without a goal, so nothing it measured is lost from the table.

export interface RatioRow {
  readonly name: string;
  readonly value: number;
  /** `min`: the ratio must be at least this; `max`: at most this. No goal: informational. */
  readonly goal?: { readonly min?: number; readonly max?: number };
  readonly note?: string;
  /** When the value is the median of per-round ratios: their spread and how many rounds. */
  readonly rounds?: { readonly min: number; readonly max: number; readonly count: number };
}

export interface SuiteRecord extends Record<string, unknown> {
  ratios?: RatioRow[];
}

export function verdict(row: RatioRow): 'PASS' | 'MISS' | 'info' {
  if (!row.goal || !Number.isFinite(row.value)) return row.goal ? 'MISS' : 'info';
  if (row.goal.min !== undefined && row.value < row.goal.min) return 'MISS';
  if (row.goal.max !== undefined && row.value > row.goal.max) return 'MISS';
  return 'PASS';
}

function goalText(row: RatioRow): string {
  if (!row.goal) return '-';
  const parts: string[] = [];
  if (row.goal.min !== undefined) parts.push(`>= ${row.goal.min}`);
  if (row.goal.max !== undefined) parts.push(`<= ${row.goal.max}`);
  return parts.join(' and ');
}

function isRatioRow(value: unknown): value is RatioRow {
  const row = value as RatioRow;
  return typeof row === 'object' && row !== null && typeof row.name === 'string' && typeof row.value === 'number';
}

/** The summary rows a suite's record offers (see the note at the top). */
export function ratioRows(suite: string, record: Record<string, unknown>): RatioRow[] {
  const declared = record.ratios;
  if (Array.isArray(declared)) {
    return declared.filter(isRatioRow).map((row) => ({ ...row, name: `${suite}: ${row.name}` }));
  }
  return Object.entries(record)
    .filter(([key, value]) => /ratio/i.test(key) && typeof value === 'number')
    .map(([key, value]) => ({ name: `${suite}: ${key}`, value: value as number }));
}

export function formatNumber(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  return Math.abs(value) >= 1000 ? Math.round(value).toLocaleString('en-US') : value.toFixed(digits);
}

function spreadText(row: RatioRow): string {
  return row.rounds ? `${formatNumber(row.rounds.min, 3)} .. ${formatNumber(row.rounds.max, 3)} (${row.rounds.count})` : '-';
}

/** `value` is the median per-round ratio where `rounds` is set; the spread column shows min .. max (rounds). */
export function summaryTable(rows: readonly RatioRow[]): string {
  const header = ['ratio', 'median', 'per-round min .. max (n)', 'goal', 'result', 'note'];
  const body = rows.map((row) => [row.name, formatNumber(row.value, 3), spreadText(row), goalText(row), verdict(row), row.note ?? '']);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

/** Prints a suite's record, one `key: value` per line, leaving the ratios to the summary. */
export function printRecord(suite: string, record: Record<string, unknown>): void {
  console.log(`\n[${suite}] results`);
  for (const [key, value] of Object.entries(record)) {
    if (key === 'ratios') continue;
    console.log(`  ${key}: ${typeof value === 'number' ? formatNumber(value) : JSON.stringify(value)}`);
  }
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

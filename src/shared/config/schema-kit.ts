import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { parseDuration } from '../duration.js';
import { isRecord, keyPath } from '../input.js';
import { ConfigError } from './document.js';

// The building blocks of a configuration schema (server and agent alike). Each key is declared
// once, as a Field: its YAML name, how to read and check it (the default beside it, the unit
// converted once), and the line that docs/*.md shows for it. zod carries the nesting, refuses
// unknown keys and tracks the key path of every problem; the messages are ours and name the key
// (`store.delta_concurrency must be an integer from 1 to 64`).

export interface FieldDoc {
  /** What the docs table shows in the default column: `256`, `required`, `(none)`. */
  readonly default: string;
  readonly meaning: string;
}

export interface Field<T = unknown> {
  /** The YAML key (snake_case). The property name it is declared under is the Config name. */
  readonly key: string;
  readonly schema: z.ZodType<T, unknown>;
  readonly doc?: FieldDoc;
  /** Set for a section: its fields, for the docs table. */
  readonly fields?: Fields;
}

export type Fields = { readonly [name: string]: Field<any> };

type Out<F extends Field<any>> = F extends Field<infer T> ? T : never;
type Flat<T> = { [K in keyof T]: T[K] };
/** The parsed section: a field whose value may be absent becomes an optional property. */
export type SectionOf<F extends Fields> = Flat<
  { readonly [K in keyof F as undefined extends Out<F[K]> ? never : K]: Out<F[K]> } & {
    readonly [K in keyof F as undefined extends Out<F[K]> ? K : never]?: Exclude<Out<F[K]>, undefined>;
  }
>;

/** A value that fails a check; the leaf turns it into an issue at the key's path. */
export class Problem extends Error {}

/** A key read by a function: `read` gets the YAML value (undefined when absent) and throws Problem. */
export function leaf<T>(key: string, doc: FieldDoc, read: (value: unknown) => T): Field<T> {
  const schema = z
    .unknown()
    .optional()
    .transform((value, ctx) => {
      try {
        return read(value);
      } catch (err) {
        if (!(err instanceof Problem)) throw err;
        ctx.addIssue({ code: 'custom', message: err.message });
        return z.NEVER;
      }
    });
  return { key, schema, doc };
}

/** A map of fields; unknown keys are refused (usually a typo), an absent or empty map takes every default. */
export function section<F extends Fields>(key: string, fields: F, doc?: FieldDoc): Field<SectionOf<F>> {
  const names = Object.keys(fields);
  const known = names.map((name) => fields[name]!.key);
  const shape = Object.fromEntries(names.map((name) => [fields[name]!.key, fields[name]!.schema]));
  const schema = z
    .strictObject(shape, {
      error: (iss) => (iss.code === 'unrecognized_keys' ? `is not a known key (known here: ${known.join(', ')})` : 'must be a map'),
    })
    .prefault({})
    .transform((raw) => {
      const out: Record<string, unknown> = {};
      for (const name of names) {
        const value = (raw as Record<string, unknown>)[fields[name]!.key];
        if (value !== undefined) out[name] = value;
      }
      return out as SectionOf<F>;
    });
  return { key, schema: schema as unknown as z.ZodType<SectionOf<F>, unknown>, fields, ...(doc ? { doc } : {}) };
}

/** Parses a whole document; the first problem becomes a ConfigError naming its key path. */
export function parseDocument<T>(root: Field<T>, doc: unknown): T {
  if (!isRecord(doc)) throw new ConfigError('(top level)', 'must be a YAML map');
  const result = root.schema.safeParse(withoutNulls(doc));
  if (result.success) return result.data;
  // A misspelt key explains the other problems of its map, so it is reported first.
  const issues = [...result.error.issues].sort((a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'));
  const issue = issues[0]!;
  const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path;
  throw new ConfigError(keyPath(path), issue.message);
}


/** YAML writes an empty key as null; it means "use the default", as an absent key does. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) if (inner !== null) out[key] = withoutNulls(inner);
  return out;
}

// ---- leaves ----

interface IntOptions {
  readonly default?: number;
  readonly min: number;
  readonly max?: number;
  readonly meaning: string;
}

function readInt(value: unknown, o: IntOptions, missing: string): number {
  const v = value ?? o.default;
  if (v === undefined) throw new Problem(missing);
  const max = o.max ?? Number.MAX_SAFE_INTEGER;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < o.min || v > max) {
    throw new Problem(`must be an integer ${o.max === undefined ? `>= ${o.min}` : `from ${o.min} to ${o.max}`}`);
  }
  return v;
}

/** The docs line of a bounded number states its bounds. */
function withRange(o: IntOptions, unit = ''): string {
  return o.max === undefined ? o.meaning : `${o.meaning}; ${o.min} to ${o.max}${unit}`;
}

export function int(key: string, o: IntOptions & { readonly default: number }): Field<number> {
  return leaf(key, { default: `\`${o.default}\``, meaning: withRange(o) }, (v) => readInt(v, o, 'is required'));
}

/** A size written in whole units (MB, KB) and read as bytes, converted here and nowhere else. */
export function bytesIn(unit: 'KB' | 'MB', key: string, o: IntOptions & { readonly default: number }): Field<number> {
  const factor = unit === 'KB' ? 1024 : 1024 * 1024;
  return leaf(key, { default: `\`${o.default}\``, meaning: withRange(o, ` ${unit}`) }, (v) => readInt(v, o, 'is required') * factor);
}

export function bool(key: string, o: { readonly default: boolean; readonly meaning: string }): Field<boolean> {
  return leaf(key, { default: `\`${o.default}\``, meaning: o.meaning }, (value) => {
    const v = value ?? o.default;
    if (typeof v !== 'boolean') throw new Problem('must be true or false');
    return v;
  });
}

interface TextOptions {
  readonly meaning: string;
  /** Shown in the docs when the key has no default: `required`, `(none)`. */
  readonly shown?: string;
}

/** A string (a number is taken as its text), or undefined when absent; throws Problem. */
export function readText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') throw new Problem('must be a string');
  const text = String(value);
  if (text.length === 0) throw new Problem('must not be empty');
  return text;
}

/** An optional string (a number is taken as its text). */
export function optionalText(key: string, o: TextOptions): Field<string | undefined> {
  return leaf(key, { default: o.shown ?? '(none)', meaning: o.meaning }, readText);
}

/** A required string; `hint` says how to get one. */
export function requiredText(key: string, o: TextOptions & { readonly hint?: string }): Field<string> {
  return leaf(key, { default: o.shown ?? 'required', meaning: o.meaning }, (value) => readRequiredText(value, o.hint));
}

export function readRequiredText(value: unknown, hint?: string): string {
  const text = readText(value);
  if (text === undefined) throw new Problem(`is required${hint ? ` (${hint})` : ''}`);
  return text;
}

/** A list of non-empty strings; [] when absent. A bad item is named by its index (`key[2]`). */
export function textList(key: string, o: { readonly meaning: string }): Field<string[]> {
  const item = z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must be a non-empty string' });
  const schema = z.array(item, { error: 'must be a list of strings' }).optional().transform((list) => list ?? []);
  return { key, schema, doc: { default: '`[]`', meaning: o.meaning } };
}

/** A path, resolved against the directory of the configuration file. */
export function resolvedAgainst(base: string, text: string): string {
  return isAbsolute(text) ? text : resolve(base, text);
}

export function oneOf<const V extends string>(key: string, values: readonly V[], o: { readonly default: V; readonly meaning: string }): Field<V> {
  return leaf(key, { default: `\`${o.default}\``, meaning: o.meaning }, (value) => {
    const v = value ?? o.default;
    if (!values.includes(v as V)) throw new Problem(`must be one of ${values.join(', ')}`);
    return v as V;
  });
}

const DURATION_EXAMPLE = 'like 500ms, 90s, 6h or 720h';

/** A duration (`90s`, `6h`, `1h30m`) read as milliseconds. */
export function durationMs(key: string, o: { readonly default: string; readonly minMs?: number; readonly meaning: string; readonly zeroMeansOff?: boolean }): Field<number> {
  const minMs = o.minMs ?? 1;
  return leaf(key, { default: `\`${o.default}\``, meaning: o.meaning }, (value) => {
    const v = value ?? o.default;
    // `0` (number or text) switches a limit off where the key allows it.
    if (o.zeroMeansOff && (v === 0 || v === '0')) return 0;
    const ms = parseDuration(v);
    if (ms === undefined || ms < minMs) {
      const floor = minMs > 1 ? ` of at least ${minMs} ms` : '';
      throw new Problem(`must be a duration ${DURATION_EXAMPLE}${floor} (got ${JSON.stringify(v)})`);
    }
    return ms;
  });
}

/** `host:port` or `[v6]:port`. */
export function parseHostPort(value: unknown): { host: string; port: number } {
  const match = typeof value === 'string' ? /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(value) : null;
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) throw new Problem(`must be host:port (got ${JSON.stringify(value)})`);
  return { host: (match[1] ?? match[2])!, port };
}

export function hostPort(key: string, o: { readonly default: string; readonly meaning: string }): Field<{ host: string; port: number }>;
export function hostPort(key: string, o: { readonly meaning: string }): Field<{ host: string; port: number } | undefined>;
export function hostPort(key: string, o: { readonly default?: string; readonly meaning: string }): Field<{ host: string; port: number } | undefined> {
  return leaf(key, { default: o.default ? `\`${o.default}\`` : '(none)', meaning: o.meaning }, (value) => {
    const v = value ?? o.default;
    return v === undefined ? undefined : parseHostPort(v);
  });
}

// ---- docs ----

/** The rows of a docs table: every documented key with its full path, in declaration order. */
export function docRows(root: Field<unknown>, prefix = ''): string[] {
  const rows: string[] = [];
  for (const field of Object.values(root.fields ?? {})) {
    const path = prefix ? `${prefix}.${field.key}` : field.key;
    if (field.doc) rows.push(`| \`${path}\` | ${field.doc.default} | ${field.doc.meaning} |`);
    if (field.fields) rows.push(...docRows(field, path));
  }
  return rows;
}

export function docTable(root: Field<unknown>): string {
  return ['| key | default | meaning |', '|---|---|---|', ...docRows(root)].join('\n');
}

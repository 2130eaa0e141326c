import { parseTrackKey } from '../artifact-key.js';
import { parseDuration } from '../duration.js';
import { isSha256Hex } from '../hash.js';
import type { Attributes } from './attributes.js';
import { MAX_ATTRIBUTES, MAX_ATTRIBUTE_VALUE, storedValue } from './attributes.js';
import { MAX_TAGS, parseTagList, parseTargetName, refuse } from './names.js';

// A filter says which devices an operator means (`POST /admin/tags`, a group): every condition
// given must hold, `{}` matches every device. Parsed once at the boundary into plain data that
// crosses threads (structured clone) and is stored as JSON; judged here in memory and by the
// fleet actor in SQL, with the same meaning.

export const FILTER_FIELDS = ['tags', 'attributes', 'artifact', 'version_hash', 'seen_within'] as const;
/** Values one attribute condition may list ("one of these"). */
export const MAX_ATTRIBUTE_CHOICES = 32;

export interface TargetFilter {
  /** The device has every one of them (sorted, no repeats). */
  readonly tags?: readonly string[];
  /** key → the values any one of which the device's attribute must equal. */
  readonly attributes?: Readonly<Record<string, readonly string[]>>;
  /** The resolved track key ('' for the default track is never written here). */
  readonly artifact?: string;
  readonly versionHash?: string;
  /** As written (`24h`), and in milliseconds. */
  readonly seenWithin?: string;
  readonly seenWithinMs?: number;
}

/** What a filter is judged against: a device as the fleet knows it at this moment. */
export interface DeviceFacts {
  readonly tags: readonly string[];
  readonly attributes: Attributes;
  readonly artifact: string | null;
  readonly versionHash: string | null;
  /** Unix seconds. */
  readonly lastSeen: number;
}

export function parseFilter(value: unknown, field = 'filter'): TargetFilter {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse(field, 'must be an object');
  const body = value as Record<string, unknown>;
  for (const key of Object.keys(body)) {
    if (!(FILTER_FIELDS as readonly string[]).includes(key)) refuse(`${field}.${key}`, `is not a known filter field (known: ${FILTER_FIELDS.join(', ')})`);
  }
  const filter: { -readonly [K in keyof TargetFilter]: TargetFilter[K] } = {};
  if (body.tags !== undefined) filter.tags = parseTagList(body.tags, `${field}.tags`, MAX_TAGS);
  if (body.attributes !== undefined) filter.attributes = attributeConditions(body.attributes, `${field}.attributes`);
  if (body.artifact !== undefined) {
    try {
      parseTrackKey(body.artifact);
    } catch {
      refuse(`${field}.artifact`, 'must be a track key: name or name/os/arch');
    }
    filter.artifact = body.artifact as string;
  }
  if (body.version_hash !== undefined) {
    if (!isSha256Hex(body.version_hash)) refuse(`${field}.version_hash`, 'must be 64 lowercase hex characters');
    filter.versionHash = body.version_hash;
  }
  if (body.seen_within !== undefined) {
    const ms = parseDuration(body.seen_within);
    if (ms === undefined || ms <= 0) refuse(`${field}.seen_within`, 'must be a duration like 15m, 24h or 7d');
    filter.seenWithin = body.seen_within as string;
    filter.seenWithinMs = ms;
  }
  return filter;
}

function attributeConditions(value: unknown, field: string): Record<string, readonly string[]> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse(field, 'must be an object of name → value or list of values');
  const entries = Object.entries(value);
  if (entries.length > MAX_ATTRIBUTES) refuse(field, `must name at most ${MAX_ATTRIBUTES} attributes`);
  const out = Object.create(null) as Record<string, readonly string[]>;
  for (const [key, wanted] of entries) {
    parseTargetName(key, `${field}.${key.slice(0, 70)}`);
    const list = Array.isArray(wanted) ? wanted : [wanted];
    if (list.length === 0 || list.length > MAX_ATTRIBUTE_CHOICES) refuse(`${field}.${key}`, `must list 1 to ${MAX_ATTRIBUTE_CHOICES} values`);
    for (const one of list) {
      if (typeof one !== 'string' || [...one].length > MAX_ATTRIBUTE_VALUE) refuse(`${field}.${key}`, `values must be text of at most ${MAX_ATTRIBUTE_VALUE} characters`);
    }
    out[key] = [...new Set(list as string[])];
  }
  return out;
}

/** The filter as the API shows it and the database keeps it (a single wanted value stays a string). */
export function filterJson(filter: TargetFilter): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (filter.tags !== undefined) out.tags = [...filter.tags];
  if (filter.attributes !== undefined) {
    out.attributes = Object.fromEntries(Object.keys(filter.attributes).sort()
      .map((key) => { const list = filter.attributes![key]!; return [key, list.length === 1 ? list[0] : [...list]]; }));
  }
  if (filter.artifact !== undefined) out.artifact = filter.artifact;
  if (filter.versionHash !== undefined) out.version_hash = filter.versionHash;
  if (filter.seenWithin !== undefined) out.seen_within = filter.seenWithin;
  return out;
}

/** Whether the device matches every condition of the filter at `nowMs`. */
export function matches(filter: TargetFilter, device: DeviceFacts, nowMs: number): boolean {
  if (filter.artifact !== undefined && device.artifact !== filter.artifact) return false;
  if (filter.versionHash !== undefined && device.versionHash !== filter.versionHash) return false;
  if (filter.seenWithinMs !== undefined && device.lastSeen < Math.floor((nowMs - filter.seenWithinMs) / 1000)) return false;
  if (filter.tags !== undefined) {
    for (const tag of filter.tags) if (!device.tags.includes(tag)) return false;
  }
  if (filter.attributes !== undefined) {
    for (const key of Object.keys(filter.attributes)) {
      const have = Object.hasOwn(device.attributes, key) ? device.attributes[key] : undefined;
      if (have === undefined) return false;
      // Compared as stored, as the SQL compares them: a device's set reaches the database so.
      const stored = storedValue(have);
      if (!filter.attributes[key]!.some((wanted) => storedValue(wanted) === stored)) return false;
    }
  }
  return true;
}

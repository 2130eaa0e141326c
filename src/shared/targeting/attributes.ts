import { refuse, isTargetName } from './names.js';

// What a device says of itself (`attributes` in a heartbeat, in the agent's configuration):
// at most 32 entries of name → text of at most 128 characters. The set is kept in a
// null-prototype object: a key such as "__proto__" is a valid name and must stay plain data.

export const MAX_ATTRIBUTES = 32;
export const MAX_ATTRIBUTE_VALUE = 128;

export type Attributes = Readonly<Record<string, string>>;

export const NO_ATTRIBUTES: Attributes = Object.freeze(Object.create(null) as Record<string, string>);

/** Length in characters (code points), so a value of 128 non-Latin characters is accepted. */
function characters(text: string): number {
  return text.length <= MAX_ATTRIBUTE_VALUE ? text.length : [...text].length;
}

/**
 * The attribute set of a heartbeat or configuration, validated. `value` is a plain object
 * (JSON, YAML) or a Map (CBOR decodes maps as Maps so no key reaches a prototype).
 */
export function parseAttributes(value: unknown, field = 'attributes'): Attributes {
  const entries = value instanceof Map ? [...value.entries()]
    : typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.entries(value) : undefined;
  if (entries === undefined) refuse(field, 'must be a map of names to text');
  if (entries.length > MAX_ATTRIBUTES) refuse(field, `must hold at most ${MAX_ATTRIBUTES} entries`);
  const out = Object.create(null) as Record<string, string>;
  for (const [key, text] of entries) {
    if (!isTargetName(key)) refuse(field, `keys must be 1 to 64 characters of A-Z, a-z, 0-9, "_", "." and "-" (got ${JSON.stringify(String(key).slice(0, 70))})`);
    if (typeof text !== 'string') refuse(`${field}.${key}`, 'must be text');
    if (characters(text) > MAX_ATTRIBUTE_VALUE) refuse(`${field}.${key}`, `must be at most ${MAX_ATTRIBUTE_VALUE} characters`);
    out[key] = text;
  }
  return out;
}

/**
 * What no text column holds as sent: U+0000 (PostgreSQL's text cannot) and an unpaired
 * surrogate (JSON carries "\ud83d" alone, UTF-8 cannot: node-postgres sends U+FFFD in its
 * place, better-sqlite3 the surrogate's own bytes, read back as three U+FFFD).
 */
const NOT_STORABLE = /[\0\p{Cs}]/gu;

/**
 * An attribute value as both engines store it and every filter compares it (docs/fleet.md):
 * those characters as U+FFFD. A front-end judges a group step by this form too, so that
 * matches() admits the devices the admin API's SQL selects.
 */
export function storedValue(text: string): string {
  return text.replace(NOT_STORABLE, '\uFFFD');
}

/** The set as an ordinary object (sorted keys), for JSON answers and the database column. */
export function attributesJson(attributes: Attributes): Record<string, string> {
  return Object.fromEntries(Object.keys(attributes).sort().map((key) => [key, attributes[key]!]));
}

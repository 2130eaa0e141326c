import { Decoder, Encoder, setSizeLimits } from 'cbor-x';
import type { Manifest } from '../../messages/manifester.js';
import { UpdaterError } from '../../shared/errors.js';

// CBOR with the integer keys of interface.md. Decoding maps integer keys to the JSON field
// names, so the one validator of src/shared/device-messages.ts applies to both transports;
// encoding maps a Manifest's JSON keys to integers. Unknown keys are ignored, as JSON ignores
// unknown properties.

type KeyTable = Readonly<Record<number, string>>;

export const HEARTBEAT_KEYS: KeyTable = { 1: 'device_id', 2: 'version_hash', 3: 'hw_info', 4: 'timestamp', 5: 'version', 6: 'artifact' };
export const HW_INFO_KEYS: KeyTable = { 1: 'arch', 2: 'os', 3: 'free_ram', 4: 'free_disk' };
export const REPORT_KEYS: KeyTable = { 1: 'device_id', 2: 'previous_hash', 3: 'new_hash', 4: 'success', 5: 'rollback_reason', 6: 'timestamp' };
export const MANIFEST_KEYS: KeyTable = {
  1: 'update_available', 2: 'target_version', 3: 'target_hash', 4: 'target_size', 5: 'delta_size', 6: 'delta_hash',
  7: 'chunk_size', 8: 'total_chunks', 9: 'signature', 10: 'delta_endpoint', 11: 'binary_endpoint', 12: 'retry_after', 13: 'artifact',
};

/** Device messages are flat maps with one nested map (hw_info): nothing deeper is ever valid. */
export const MAX_CBOR_DEPTH = 3;

// A device message has at most a dozen keys. cbor-x checks declared lengths against these
// limits and against the bytes left before it allocates, so a five-byte header declaring a
// four-billion-element array is refused without allocating it. The limits are per thread;
// this module is loaded only by the CoAP front-end's thread (and tests and benchmarks).
setSizeLimits({ maxArraySize: 64, maxMapSize: 64, maxObjectSize: 64 });

// Maps stay Maps, so integer keys stay integers and no key can reach an object prototype.
const decoder = new Decoder({ mapsAsObjects: false, useRecords: false });
const encoder = new Encoder({ mapsAsObjects: false, useRecords: false, variableMapSize: true });

/** Decodes a CBOR body of at most a few KiB; anything that is not exactly one CBOR item is MALFORMED_BODY. */
export function decodeCbor(body: Uint8Array): unknown {
  if (body.length === 0) throw new UpdaterError('MALFORMED_BODY', 'the body is empty; CBOR expected');
  let value: unknown;
  try {
    value = decoder.decode(body);
  } catch {
    // Truncated input, a declared length beyond the data, trailing bytes, or a stack
    // overflow from nesting: all the same client mistake.
    throw new UpdaterError('MALFORMED_BODY', 'the body is not valid CBOR');
  }
  if (depthOf(value, 0) > MAX_CBOR_DEPTH) throw new UpdaterError('MALFORMED_BODY', `the body nests deeper than ${MAX_CBOR_DEPTH} levels`);
  return value;
}

/** Nesting depth, giving up as soon as it passes the limit so a deep value costs little. */
function depthOf(value: unknown, depth: number): number {
  if (depth > MAX_CBOR_DEPTH) return depth;
  let deepest = depth;
  const visit = (inner: unknown) => {
    deepest = Math.max(deepest, depthOf(inner, depth + 1));
  };
  if (value instanceof Map) for (const [k, v] of value) { visit(k); visit(v); }
  else if (Array.isArray(value)) value.forEach(visit);
  else if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value)) Object.values(value).forEach(visit);
  return deepest;
}

/** Renames the integer keys of a decoded CBOR map; non-maps pass through for the validator to refuse. */
export function fromIntegerKeys(value: unknown, keys: KeyTable, nested: Readonly<Record<string, KeyTable>> = {}): unknown {
  if (!(value instanceof Map)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of value) {
    if (typeof key !== 'number') continue;
    const name = keys[key];
    if (name === undefined) continue;
    const table = nested[name];
    out[name] = table ? fromIntegerKeys(inner, table) : inner;
  }
  return out;
}

export function heartbeatFields(body: Uint8Array): unknown {
  return fromIntegerKeys(decodeCbor(body), HEARTBEAT_KEYS, { hw_info: HW_INFO_KEYS });
}

export function reportFields(body: Uint8Array): unknown {
  return fromIntegerKeys(decodeCbor(body), REPORT_KEYS);
}

const MANIFEST_KEY_OF: Readonly<Record<string, number>> = invert(MANIFEST_KEYS);

/** A Manifest (JSON keys, optional keys already left out when empty) as CBOR with integer keys. */
export function encodeManifest(manifest: Manifest): Buffer {
  const map = new Map<number, unknown>();
  for (const [name, value] of Object.entries(manifest)) {
    const key = MANIFEST_KEY_OF[name];
    if (key !== undefined && value !== undefined) map.set(key, wireInteger(value));
  }
  return encoder.encode(map);
}

/** Encodes any JSON-keyed object with a key table: clients, tests and benchmarks build requests with it. */
export function encodeWithIntegerKeys(fields: Record<string, unknown>, keys: KeyTable, nested: Readonly<Record<string, KeyTable>> = {}): Buffer {
  return encoder.encode(toIntegerKeys(fields, keys, nested));
}

function toIntegerKeys(fields: Record<string, unknown>, keys: KeyTable, nested: Readonly<Record<string, KeyTable>>): Map<number, unknown> {
  const keyOf = invert(keys);
  const map = new Map<number, unknown>();
  for (const [name, value] of Object.entries(fields)) {
    const key = keyOf[name];
    if (key === undefined || value === undefined) continue;
    const table = nested[name];
    map.set(key, table && typeof value === 'object' && value !== null ? toIntegerKeys(value as Record<string, unknown>, table, {}) : wireInteger(value));
  }
  return map;
}

/** The inverse of encodeManifest, for clients and tests. */
export function decodeManifest(body: Uint8Array): Record<string, unknown> {
  return fromIntegerKeys(decodeCbor(body), MANIFEST_KEYS) as Record<string, unknown>;
}

/** cbor-x writes integers above 2^32 as floats; as BigInt they travel as CBOR unsigned integers. */
function wireInteger(value: unknown): unknown {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0xffff_ffff ? BigInt(value) : value;
}

function invert(keys: KeyTable): Record<string, number> {
  return Object.fromEntries(Object.entries(keys).map(([k, name]) => [name, Number(k)]));
}

import { Decoder, Encoder, setSizeLimits } from 'cbor-x';
import { UpdaterError } from '../errors.js';
import { largestBlockWithin } from './block2.js';
import {
  AUTH_ANSWER_KEYS, AUTH_REQUEST_KEYS, CERTIFICATE_KEYS, HEARTBEAT_KEYS, HW_INFO_KEYS, MANIFEST_KEYS, RELEASE_KEYS, REPORT_KEYS,
  type CertificateWire, type HeartbeatWire, type ManifestWire, type ReportWire,
} from './keys.js';

// CBOR bodies of the device protocol with the integer keys of keys.ts, for the CoAP front-end,
// the agent, the load harness, the benchmarks and the tests alike. Decoding maps integer keys
// to the JSON names, so the one validator (validate.ts) applies to both transports. Unknown
// keys are ignored, as JSON ignores unknown properties. Plain CBOR maps (no tag 259, no cbor-x
// records), so any CBOR implementation reads them.

/** Device messages are flat maps with one nested map (hw_info): nothing deeper is ever valid. */
export const MAX_CBOR_DEPTH = 3;

// A device message has at most a dozen keys. cbor-x checks declared lengths against these
// limits and against the bytes left before it allocates, so a five-byte header declaring a
// four-billion-element array is refused without allocating it. The limits are per thread and
// apply to every thread that loads this module, none of which decodes anything larger.
setSizeLimits({ maxArraySize: 64, maxMapSize: 64, maxObjectSize: 64 });

// Maps stay Maps, so integer keys stay integers and no key can reach an object prototype.
const decoder = new Decoder({ mapsAsObjects: false, useRecords: false });
const encoder = new Encoder({ mapsAsObjects: false, useRecords: false, variableMapSize: true });

/** One message's key table, with its inverse computed here rather than written out. */
class KeyTable {
  private readonly names: ReadonlyMap<number, string>;
  constructor(
    private readonly keys: Readonly<Record<string, number>>,
    private readonly nested: Readonly<Record<string, KeyTable>> = {},
    /** Fields that are hex text in JSON and a byte string in CBOR (signatures of the trust layer). */
    private readonly bytes: ReadonlySet<string> = new Set(),
  ) {
    this.names = new Map(Object.entries(keys).map(([name, key]) => [key, name]));
  }

  /** Renames the integer keys of a decoded map; a non-map passes through for the validator to refuse. */
  fromIntegers(value: unknown): unknown {
    if (!(value instanceof Map)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of value) {
      const name = typeof key === 'number' ? this.names.get(key) : undefined;
      if (name === undefined) continue;
      const table = this.nested[name];
      out[name] = table ? table.fromIntegers(inner) : this.bytes.has(name) && inner instanceof Uint8Array ? Buffer.from(inner).toString('hex') : inner;
    }
    return out;
  }

  toIntegers(fields: Readonly<Record<string, unknown>>): Map<number, unknown> {
    const map = new Map<number, unknown>();
    for (const [name, value] of Object.entries(fields)) {
      const key = this.keys[name];
      if (key === undefined || value === undefined) continue;
      const table = this.nested[name];
      if (this.bytes.has(name) && typeof value === 'string') map.set(key, Buffer.from(value, 'hex'));
      else map.set(key, table && typeof value === 'object' && value !== null ? table.toIntegers(value as Record<string, unknown>) : wireInteger(value));
    }
    return map;
  }
}

const HEARTBEAT = new KeyTable(HEARTBEAT_KEYS, { hw_info: new KeyTable(HW_INFO_KEYS) });
const REPORT = new KeyTable(REPORT_KEYS);
const SIGNATURE = new Set(['signature']);
const MANIFEST = new KeyTable(MANIFEST_KEYS, { release: new KeyTable(RELEASE_KEYS, {}, SIGNATURE) });
const CERTIFICATE = new KeyTable(CERTIFICATE_KEYS, {}, SIGNATURE);

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

/**
 * Nesting depth (a scalar inside a map at the top is depth 1), giving up as soon as it passes
 * the limit so a deep value costs little. It runs on every CoAP body: no closure or entry array
 * per value (the first version's were a seventh of the CoAP thread's allocation).
 */
function depthOf(value: unknown, depth: number): number {
  if (depth > MAX_CBOR_DEPTH || typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return depth;
  const inner = depth + 1;
  let deepest = depth;
  if (value instanceof Map) {
    for (const key of value.keys()) if ((deepest = Math.max(deepest, depthOf(key, inner))) > MAX_CBOR_DEPTH) return deepest;
    for (const item of value.values()) if ((deepest = Math.max(deepest, depthOf(item, inner))) > MAX_CBOR_DEPTH) return deepest;
  } else {
    // An array, or an object a CBOR tag decodes to.
    for (const item of Array.isArray(value) ? value : Object.values(value)) if ((deepest = Math.max(deepest, depthOf(item, inner))) > MAX_CBOR_DEPTH) return deepest;
  }
  return deepest;
}

/** A heartbeat body with its JSON names, for validateHeartbeat. */
export function heartbeatFields(body: Uint8Array): unknown {
  return HEARTBEAT.fromIntegers(decodeCbor(body));
}

/** A report body with its JSON names, for validateReport. */
export function reportFields(body: Uint8Array): unknown {
  return REPORT.fromIntegers(decodeCbor(body));
}

/**
 * A heartbeat as CBOR. Fields outside the protocol are left out; a value of the wrong type
 * is written as it is (tests send such bodies on purpose).
 */
export function encodeHeartbeat(heartbeat: HeartbeatWire | Readonly<Record<string, unknown>>): Buffer {
  return encoder.encode(HEARTBEAT.toIntegers(heartbeat as Readonly<Record<string, unknown>>));
}

export function encodeReport(report: ReportWire | Readonly<Record<string, unknown>>): Buffer {
  return encoder.encode(REPORT.toIntegers(report as Readonly<Record<string, unknown>>));
}

export function encodeManifest(manifest: ManifestWire): Buffer {
  return encoder.encode(MANIFEST.toIntegers(manifest as unknown as Record<string, unknown>));
}

/**
 * A manifest as a CoAP device gets it: `chunk_size` is the Block2 size a device should
 * request, so the configured one (an HTTP Range length, 64 KiB by default) is brought down to
 * the largest Block2 size not above it, and `total_chunks` follows; every other value is
 * unchanged. An exactly sized copy of the bytes: the manifester keeps it with its answer and
 * sends it across threads, where a view of the encoder's buffer would carry the whole buffer.
 */
export function encodeCoapManifest(manifest: ManifestWire): Uint8Array {
  const chunk = largestBlockWithin(manifest.chunk_size);
  const coap = chunk === manifest.chunk_size ? manifest : { ...manifest, chunk_size: chunk, total_chunks: Math.ceil(manifest.delta_size / chunk) };
  return new Uint8Array(encodeManifest(coap));
}

/**
 * A manifest body with its JSON names, for a client's validator. Integers that CBOR carried
 * as 64-bit values come back as numbers. A body that is not a map is MALFORMED_BODY.
 */
export function decodeManifest(body: Uint8Array): Record<string, unknown> {
  return decodeAnswer(MANIFEST, body, 'the manifest');
}

/** A server's answer with its JSON names, 64-bit integers as numbers; MALFORMED_BODY unless a map. */
function decodeAnswer(table: KeyTable, body: Uint8Array, what: string): Record<string, unknown> {
  const value = decodeCbor(body);
  if (!(value instanceof Map)) throw new UpdaterError('MALFORMED_BODY', `${what} is not a CBOR map`);
  const answer = table.fromIntegers(value) as Record<string, unknown>;
  numbersOf(answer);
  if (typeof answer.release === 'object' && answer.release !== null) numbersOf(answer.release as Record<string, unknown>);
  return answer;
}

/** A signing key's certificate as `GET /keys` answers over CoAP. */
export function encodeCertificate(cert: CertificateWire): Buffer {
  return encoder.encode(CERTIFICATE.toIntegers(cert as unknown as Record<string, unknown>));
}

/** A certificate body with its JSON names (the signature as hex), for a client's validator. */
export function decodeCertificate(body: Uint8Array): Record<string, unknown> {
  const value = decodeCbor(body);
  if (!(value instanceof Map)) throw new UpdaterError('MALFORMED_BODY', 'the certificate is not a CBOR map');
  return numbersOf(CERTIFICATE.fromIntegers(value) as Record<string, unknown>);
}

/** Integers that CBOR carried as 64-bit values come back as numbers. */
function numbersOf(fields: Record<string, unknown>): Record<string, unknown> {
  for (const [name, inner] of Object.entries(fields)) if (typeof inner === 'bigint') fields[name] = Number(inner);
  return fields;
}

/** cbor-x writes integers above 2^32 as floats; as BigInt they travel as CBOR unsigned integers. */
function wireInteger(value: unknown): unknown {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0xffff_ffff ? BigInt(value) : value;
}

const AUTH_REQUEST = new KeyTable(AUTH_REQUEST_KEYS);
const AUTH_ANSWER = new KeyTable(AUTH_ANSWER_KEYS);

/** A POST /auth body with its JSON names (a non-map comes back as an empty object, for the validator to refuse). */
export function authRequestFields(body: Uint8Array): Record<string, unknown> {
  const fields = AUTH_REQUEST.fromIntegers(decodeCbor(body));
  return typeof fields === 'object' && fields !== null ? fields as Record<string, unknown> : {};
}

export function encodeAuthRequest(request: Readonly<Record<string, unknown>>): Buffer {
  return encoder.encode(AUTH_REQUEST.toIntegers(request));
}

/** The answer to POST /auth: `{token, expires_in}` or `{state, retry_after}`. */
export function encodeAuthAnswer(answer: Readonly<Record<string, unknown>>): Buffer {
  return encoder.encode(AUTH_ANSWER.toIntegers(answer));
}

export function decodeAuthAnswer(body: Uint8Array): Record<string, unknown> {
  return decodeAnswer(AUTH_ANSWER, body, 'the auth answer');
}

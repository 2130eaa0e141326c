import { parseTrackKey } from '../artifact-key.js';
import { MAX_FORMAT_NAME, MAX_NAMED_FORMATS } from '../delta-formats.js';
import { UpdaterError } from '../errors.js';
import { assertSha256Hex, isSha256Hex } from '../hash.js';
import { invalidField as fail, isRecord } from '../input.js';
import { parseAttributes, type Attributes } from '../targeting/attributes.js';
import { MAX_VERSION_LABEL_LENGTH, NOT_PRINTABLE } from '../version-label.js';
import { PassedTexts } from './passed-texts.js';

// Validation of decoded device messages, shared by the JSON (HTTP) and CBOR (CoAP) codecs:
// each codec maps its keys to these field names, then one set of rules applies.

/** A heartbeat is a few hundred bytes; anything larger is refused before it is parsed. */
export const MAX_DEVICE_BODY_BYTES = 4096;

/**
 * What a decision reads of a validated heartbeat (src/messages/manifester.ts): the front-end
 * routes a rollout with its attributes, and hands the manifester the route it took.
 */
export type HeartbeatRequest = Pick<Heartbeat, 'deviceId' | 'versionHash' | 'artifact'> & {
  readonly deltaFormats?: readonly string[];
  readonly attributes?: Attributes;
  /** The front-end's routing of the rollout (src/shared/decision/route.ts), when it routed one. */
  readonly route?: 'target' | 'stable' | 'stay';
};

export interface HeartbeatFields {
  device_id?: unknown;
  version_hash?: unknown;
  hw_info?: unknown;
  timestamp?: unknown;
  version?: unknown;
  artifact?: unknown;
  attributes?: unknown;
  delta_formats?: unknown;
}

/**
 * A heartbeat as every stage after its front-end takes it: parsed and validated once, typed,
 * whatever the transport (the manifester's decision, the fleet inventory, and what a device
 * token is checked against all read these fields, never the decoded body again).
 */
export interface Heartbeat {
  readonly deviceId: string;
  readonly versionHash: string;
  /** The track key as sent, already checked to be one; '' means the default track. */
  readonly artifact: string;
  readonly version: string;
  readonly hwArch: string;
  readonly hwOs: string;
  readonly hwFreeRam: number;
  readonly hwFreeDisk: number;
  /** The device's clock, Unix seconds. */
  readonly timestamp: number;
  /** The patch formats the device applies, most preferred first; absent when it named none. */
  readonly deltaFormats?: readonly string[];
  /** What the device says of itself (null-prototype, validated); absent when the heartbeat carried none, which leaves the stored set as it is. */
  readonly attributes?: Attributes;
}

export interface UpdateReport {
  deviceId: string;
  previousHash: string;
  newHash: string;
  success: boolean;
  rollbackReason: string;
  timestamp: number;
}

export interface ReportFields {
  device_id?: unknown;
  previous_hash?: unknown;
  new_hash?: unknown;
  success?: unknown;
  rollback_reason?: unknown;
  timestamp?: unknown;
}

function text(value: unknown, field: string, max: number, required: boolean): string {
  if (value === undefined || value === null) {
    if (required) fail(field, 'is required');
    return '';
  }
  if (typeof value !== 'string') fail(field, 'must be a string');
  if (value.length > max) fail(field, `must be at most ${max} characters`);
  if (required && value.length === 0) fail(field, 'must not be empty');
  return value;
}

function integer(value: unknown, field: string, required: boolean): number {
  if (value === undefined || value === null) {
    if (required) fail(field, 'is required');
    return 0;
  }
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) fail(field, 'must be a non-negative integer');
  return n;
}

/** Longest device id a device may send (and an operator may name). */
export const MAX_DEVICE_ID = 128;

/**
 * The one rule for a device id where it enters (heartbeat, report, POST /auth over HTTP and
 * CoAP, preauthorize): 1 to 128 characters, not "." or ".." (they read as paths in logs, URLs
 * and the console), no control character or line separator (they forge log lines and console
 * text). Refused with INVALID_FIELD naming `field`.
 */
export function deviceIdField(value: unknown, field = 'device_id'): string {
  const id = text(value, field, MAX_DEVICE_ID, true);
  if (id === '.' || id === '..') fail(field, 'must not be "." or ".."');
  const bad = NOT_PRINTABLE.exec(id);
  if (bad) fail(field, `must not contain a control character or line separator (found U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} at index ${bad.index})`);
  return id;
}

/**
 * delta_formats: at most MAX_NAMED_FORMATS short names. Names the server does not know are
 * kept (a device may know newer formats) and simply never chosen.
 */
function formatList(value: unknown): readonly string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) fail('delta_formats', 'must be an array of format names');
  if (value.length > MAX_NAMED_FORMATS) fail('delta_formats', `must name at most ${MAX_NAMED_FORMATS} formats`);
  for (const name of value) {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_FORMAT_NAME) {
      fail('delta_formats', `must hold names of 1 to ${MAX_FORMAT_NAME} characters`);
    }
  }
  return value as string[];
}

/** A field that must be sent, though it may be empty. */
function present(value: unknown, field: string): void {
  if (value === undefined || value === null) fail(field, 'is required');
}

/** Version hashes and track keys already found valid on this thread (passed-texts.ts). */
const passedHashes = new PassedTexts();
const passedTracks = new PassedTexts();

function versionHashField(value: unknown): string {
  if (passedHashes.has(value)) return value;
  passedHashes.add(assertSha256Hex(value, 'version_hash'));
  return value as string;
}

/** The track key as sent ('' for the default track), once it is found to be one. */
function trackField(value: unknown): string {
  if (passedTracks.has(value)) return value;
  const artifact = text(value, 'artifact', 200, false);
  if (artifact === '') return artifact;
  parseTrackKey(artifact);
  passedTracks.add(artifact);
  return artifact;
}

export function validateHeartbeat(body: unknown): Heartbeat {
  if (!isRecord(body)) throw new UpdaterError('MALFORMED_BODY', 'a heartbeat must be an object');
  const fields = body as HeartbeatFields;
  // Spec 2.1: every field but artifact is part of a heartbeat (docs/protocol.md, "Required fields").
  const deviceId = deviceIdField(fields.device_id);
  const versionHash = versionHashField(fields.version_hash);
  const timestamp = integer(fields.timestamp, 'timestamp', true);
  present(fields.version, 'version');
  const version = text(fields.version, 'version', MAX_VERSION_LABEL_LENGTH, false);
  if (fields.hw_info === undefined || fields.hw_info === null) fail('hw_info', 'is required');
  if (!isRecord(fields.hw_info)) fail('hw_info', 'must be an object');
  const hw = fields.hw_info;
  present(hw.arch, 'hw_info.arch');
  present(hw.os, 'hw_info.os');
  const hwArch = text(hw.arch, 'hw_info.arch', 32, false);
  const hwOs = text(hw.os, 'hw_info.os', 32, false);
  const hwFreeRam = integer(hw.free_ram, 'hw_info.free_ram', true);
  const hwFreeDisk = integer(hw.free_disk, 'hw_info.free_disk', true);
  const artifact = trackField(fields.artifact);
  const deltaFormats = formatList(fields.delta_formats);
  const attributes = fields.attributes === undefined || fields.attributes === null ? undefined : parseAttributes(fields.attributes);
  return {
    deviceId, versionHash, artifact, version, hwArch, hwOs, hwFreeRam, hwFreeDisk, timestamp,
    ...(deltaFormats ? { deltaFormats } : {}), ...(attributes ? { attributes } : {}),
  };
}

export function validateReport(body: unknown): UpdateReport {
  if (!isRecord(body)) throw new UpdaterError('MALFORMED_BODY', 'a report must be an object');
  const fields = body as ReportFields;
  // previous_hash may be empty (a first install has none); it must still be sent.
  const hash = (value: unknown, field: string) => {
    present(value, field);
    if (value === '') return '';
    if (!isSha256Hex(value)) assertSha256Hex(value, field);
    return value as string;
  };
  if (typeof fields.success !== 'boolean') fail('success', 'must be true or false');
  return {
    deviceId: deviceIdField(fields.device_id),
    previousHash: hash(fields.previous_hash, 'previous_hash'),
    newHash: assertSha256Hex(fields.new_hash, 'new_hash'),
    success: fields.success,
    rollbackReason: text(fields.rollback_reason, 'rollback_reason', 512, false),
    timestamp: integer(fields.timestamp, 'timestamp', true),
  };
}

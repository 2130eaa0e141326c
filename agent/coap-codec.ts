import { Decoder, Encoder } from 'cbor-x';
import { UpdaterError } from '../src/shared/errors.js';
import type { ReportWire } from './state.js';
import type { HeartbeatWire } from './transport.js';

// CBOR bodies of the device protocol with the integer keys of interface.md. Plain CBOR maps
// (no tag 259, no cbor-x records), so any CBOR decoder on the server reads them.

// useTag259ForMaps is a cbor-x option its typings do not list yet.
const encoder = new Encoder({ useRecords: false, useTag259ForMaps: false } as ConstructorParameters<typeof Encoder>[0]);
const decoder = new Decoder({ useRecords: false, mapsAsObjects: false });

const HEARTBEAT_KEYS = { device_id: 1, version_hash: 2, hw_info: 3, timestamp: 4, version: 5, artifact: 6 } as const;
const HW_INFO_KEYS = { arch: 1, os: 2, free_ram: 3, free_disk: 4 } as const;
const REPORT_KEYS = { device_id: 1, previous_hash: 2, new_hash: 3, success: 4, rollback_reason: 5, timestamp: 6 } as const;
const MANIFEST_KEYS = {
  update_available: 1, target_version: 2, target_hash: 3, target_size: 4, delta_size: 5, delta_hash: 6, chunk_size: 7,
  total_chunks: 8, signature: 9, delta_endpoint: 10, binary_endpoint: 11, retry_after: 12, artifact: 13,
} as const;

function toIntMap(value: Record<string, unknown>, keys: Record<string, number>): Map<number, unknown> {
  const map = new Map<number, unknown>();
  for (const [name, key] of Object.entries(keys)) {
    if (value[name] !== undefined) map.set(key, value[name]);
  }
  return map;
}

export function encodeHeartbeat(heartbeat: HeartbeatWire): Buffer {
  const map = toIntMap(heartbeat as unknown as Record<string, unknown>, HEARTBEAT_KEYS);
  map.set(HEARTBEAT_KEYS.hw_info, toIntMap(heartbeat.hw_info, HW_INFO_KEYS));
  return encoder.encode(map);
}

export function encodeReport(report: ReportWire): Buffer {
  return encoder.encode(toIntMap(report as unknown as Record<string, unknown>, REPORT_KEYS));
}

/** The manifest with its JSON field names, so one validator (manifest.ts) serves both transports. */
export function decodeManifest(payload: Buffer): Record<string, unknown> {
  let decoded: unknown;
  try {
    decoded = decoder.decode(payload);
  } catch (err) {
    throw new UpdaterError('AGENT_MANIFEST_INVALID', `the manifest is not valid CBOR: ${(err as Error).message}`);
  }
  if (!(decoded instanceof Map)) throw new UpdaterError('AGENT_MANIFEST_INVALID', 'the manifest is not a CBOR map');
  const manifest: Record<string, unknown> = {};
  for (const [name, key] of Object.entries(MANIFEST_KEYS)) {
    const value = decoded.get(key);
    if (value !== undefined) manifest[name] = typeof value === 'bigint' ? Number(value) : value;
  }
  return manifest;
}

/** For the test bridge and any tool that speaks the protocol: the same tables, the other way. */
export const CBOR_KEYS = { heartbeat: HEARTBEAT_KEYS, hwInfo: HW_INFO_KEYS, report: REPORT_KEYS, manifest: MANIFEST_KEYS } as const;
export { encoder as cborEncoder, decoder as cborDecoder };

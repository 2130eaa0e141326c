// The device protocol's field names (the JSON keys of HTTP) and the integer keys CBOR uses
// for them over CoAP: one table per message, written once, name → integer. Decoders invert
// them in code (cbor.ts); nothing else spells a key number.

export const HEARTBEAT_KEYS = { device_id: 1, version_hash: 2, hw_info: 3, timestamp: 4, version: 5, artifact: 6, attributes: 7, delta_formats: 8 } as const;
export const HW_INFO_KEYS = { arch: 1, os: 2, free_ram: 3, free_disk: 4 } as const;
export const REPORT_KEYS = { device_id: 1, previous_hash: 2, new_hash: 3, success: 4, rollback_reason: 5, timestamp: 6 } as const;
export const MANIFEST_KEYS = {
  update_available: 1, target_version: 2, target_hash: 3, target_size: 4, delta_size: 5, delta_hash: 6, chunk_size: 7,
  total_chunks: 8, signature: 9, delta_endpoint: 10, binary_endpoint: 11, retry_after: 12, artifact: 13,
  release: 14, delta_format: 15,
} as const;
/** The release statement inside a manifest (key 14); its signature travels as 64 bytes in CBOR. */
export const RELEASE_KEYS = { sequence: 1, issued_at: 2, expires_at: 3, signature: 4 } as const;
/** A signing key's certificate, as `GET /keys` serves it over CoAP; its signature as 64 bytes. */
export const CERTIFICATE_KEYS = { public_key: 1, not_before: 2, not_after: 3, serial: 4, signature: 5 } as const;

/** POST /auth (devices.auth): the signed request and its answer (a token, or pending). */
export const AUTH_REQUEST_KEYS = { device_id: 1, public_key: 2, timestamp: 3, signature: 4 } as const;
export const AUTH_ANSWER_KEYS = { token: 1, expires_in: 2, state: 3, retry_after: 4 } as const;

/** A heartbeat as a device sends it. */
export interface HeartbeatWire {
  device_id: string;
  version_hash: string;
  hw_info: { arch: string; os: string; free_ram: number; free_disk: number };
  timestamp: number;
  version: string;
  artifact?: string;
  /** What the device says of itself, at most 32 name → text entries (docs/protocol.md, "Attributes"); a CBOR map under key 7. */
  attributes?: Record<string, string>;
  /** The patch formats the device applies, most preferred first (docs/protocol.md, "Patch formats"). */
  delta_formats?: string[];
}

/** An update report as a device sends it. */
export interface ReportWire {
  device_id: string;
  previous_hash: string;
  new_hash: string;
  success: boolean;
  rollback_reason?: string;
  timestamp: number;
}

/** ManifestResponse: the server's answer to a heartbeat; optional keys are left out when empty. */
export interface ManifestWire {
  update_available: boolean;
  target_version: string;
  target_hash: string;
  target_size: number;
  delta_size: number;
  delta_hash: string;
  chunk_size: number;
  total_chunks: number;
  signature?: string;
  delta_endpoint?: string;
  binary_endpoint?: string;
  retry_after?: number;
  artifact: string;
  /** The signed release statement of the target this answer names (src/shared/release/statement.ts). */
  release?: ReleaseWire;
  /** The patch format of the delta at delta_endpoint; left out for bsdiff40. */
  delta_format?: string;
}

export interface ReleaseWire {
  sequence: number;
  issued_at: number;
  expires_at: number;
  signature: string;
}

export interface CertificateWire {
  public_key: string;
  not_before: number;
  not_after: number;
  serial: number;
  signature: string;
}

// The tables and the types name the same keys; the compiler says so.
type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;
const sameKeys: [
  SameKeys<typeof HEARTBEAT_KEYS, HeartbeatWire>, SameKeys<typeof HW_INFO_KEYS, HeartbeatWire['hw_info']>,
  SameKeys<typeof REPORT_KEYS, ReportWire>, SameKeys<typeof MANIFEST_KEYS, ManifestWire>,
  SameKeys<typeof RELEASE_KEYS, ReleaseWire>, SameKeys<typeof CERTIFICATE_KEYS, CertificateWire>,
] = [true, true, true, true, true, true];
void sameKeys;

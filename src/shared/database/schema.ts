import type { Generated } from 'kysely';

// The fleet database's tables, as Kysely sees them. Times are Unix seconds; a boolean is an
// integer 0/1 on both engines, so that one set of queries reads the same values everywhere.

export interface DevicesTable {
  device_id: string;
  /** The resolved track key the device's last heartbeat was answered for. */
  artifact: string;
  version_hash: string;
  version: string;
  hw_arch: string;
  hw_os: string;
  hw_free_ram: number;
  hw_free_disk: number;
  transport: string;
  first_seen: number;
  last_seen: number;
  last_report_success: number | null;
  last_report_new_hash: string | null;
  last_report_reason: string | null;
  last_report_at: number | null;
}

export interface ReportsTable {
  /** Insertion order: the latest report of a device is the one with the highest id. */
  id: Generated<number>;
  device_id: string;
  previous_hash: string;
  new_hash: string;
  success: number;
  rollback_reason: string;
  timestamp: number;
  received_at: number;
  /** The same moment in milliseconds (migration 0009); null in rows written before it. */
  received_at_ms: number | null;
}

/** Devices per track and version, maintained by each flush (the summary reads it). */
export interface FleetVersionsTable {
  artifact: string;
  version_hash: string;
  /** The version text last reported with this hash. */
  version: string;
  devices: number;
}

/**
 * Cluster mode (PostgreSQL): one row per track, its whole record as the JSON the state file
 * would hold for it (validated by the same decoder when read back).
 */
export interface ClusterTracksTable {
  artifact: string;
  doc: string;
}

/** Cluster mode: `default`, `config_default` and `revision` (bumped by every change). */
export interface ClusterMetaTable {
  key: string;
  value: string;
}

/** Operator tokens: the SHA-256 (hex) of each token, never the token itself. */
export interface OperatorTokensTable {
  id: string;
  name: string;
  role: string;
  hash: string;
  created_at: number;
  expires_at: number | null;
}

/** One admin request that changed something or was refused. */
export interface AuditLogTable {
  id: Generated<number>;
  at: number;
  token_id: string | null;
  token_name: string | null;
  role: string | null;
  method: string;
  path: string;
  status: number;
  detail: string;
}

/** One event for one webhook (src/actors/fleet/webhooks/). Times are Unix milliseconds. */
export interface WebhookOutboxTable {
  /** Order of the events per webhook. */
  id: Generated<number>;
  /** The webhook's URL, which names its queue. */
  webhook: string;
  event_id: string;
  type: string;
  /** The CloudEvent as sent, serialized once. */
  body: string;
  created_at: number;
  /** `pending`, `delivered`, or `failed` (gave up after 24 h). */
  state: string;
  attempts: number;
  /** When a pending row is due (its next attempt). */
  next_at: number;
  last_status: number | null;
  last_error: string | null;
  done_at: number | null;
}

/** Device identity (docs/operations.md, enrollment): a device id bound to its first key. */
export interface DeviceIdentitiesTable {
  device_id: string;
  /** Ed25519 public key, 64 lowercase hex; '' for an id an operator rejected before it ever authenticated. */
  public_key: string;
  auth_state: 'pending' | 'accepted' | 'rejected' | 'preauthorized';
  /** The timestamp of the device's last verified auth request (a replay must be newer); 0 before the first. */
  last_auth_at: number;
  created_at: number;
  updated_at: number;
}

/** Devices whose tokens issued at or before `revoked_at` are refused (rejected or deleted). */
export interface DeviceRevocationsTable {
  /** The first 16 bytes of SHA-256 over the device id, hex: what a token carries. */
  id_hash: string;
  device_id: string;
  revoked_at: number;
}

/** The token MAC key, made by whichever replica starts first and read by every other. */
export interface DeviceAuthKeysTable {
  name: string;
  value: string;
}

/** Which device was offered which rollout target, from which version (migration 0012). */
export interface RolloutOffersTable {
  device_id: string;
  target_hash: string;
  /** The version hash of the heartbeat that was offered the target. */
  from_hash: string;
  /** Unix seconds of the latest such offer. */
  offered_at: number;
}

/** The attributes a device's latest heartbeat that carried any sent (migration 0013). */
export interface DeviceAttributesTable {
  device_id: string;
  name: string;
  value: string;
}

/** An operator's tags of a device (migration 0013). */
export interface DeviceTagsTable {
  device_id: string;
  tag: string;
}

/** A group: a named filter, as the JSON the API shows (src/shared/targeting/filter.ts). */
export interface DeviceGroupsTable {
  name: string;
  filter: string;
  created_at: number;
  updated_at: number;
}

export interface Database {
  rollout_offers: RolloutOffersTable;
  device_attributes: DeviceAttributesTable;
  device_tags: DeviceTagsTable;
  device_groups: DeviceGroupsTable;
  devices: DevicesTable;
  reports: ReportsTable;
  fleet_versions: FleetVersionsTable;
  cluster_tracks: ClusterTracksTable;
  cluster_meta: ClusterMetaTable;
  device_identities: DeviceIdentitiesTable;
  device_revocations: DeviceRevocationsTable;
  device_auth_keys: DeviceAuthKeysTable;
  operator_tokens: OperatorTokensTable;
  audit_log: AuditLogTable;
  webhook_outbox: WebhookOutboxTable;
}

export type Engine = 'sqlite' | 'postgres';

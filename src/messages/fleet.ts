import type { TargetingIndex } from './targeting-index.js';
import { DEVICE_AUTH_STATES, type DeviceAuthState, type DeviceView, type FleetReportView, type FleetSummary, type GroupView, type ReportView } from './admin-wire.js';
import type { TargetFilter } from '../shared/targeting/filter.js';
import { CONTROL_DEADLINES_MS, type Deadlines, type ControlApi } from './lifecycle.js';
import type { AuthOutcome, AuthRequest } from '../shared/device-identity/auth-request.js';
import type { DeviceTrust } from '../shared/device-identity/token.js';
import { OPERATORS_DEADLINES_MS, type OperatorsApi } from './operators.js';
import type { WebhookEvent } from '../shared/webhooks/events.js';
import type { WebhookState } from './webhooks.js';

// The fleet actor's API: the inventory write path (fed by both front-ends, after they have
// answered), the admin reads (docs/fleet.md, "Reading it"), and the rollout health counts.

/** One answered heartbeat, as a front-end hands it to the fleet actor. */
export interface HeartbeatRecord {
  readonly deviceId: string;
  readonly versionHash: string;
  readonly version: string;
  /** The track key the heartbeat named; '' means the default track (the fleet resolves it). */
  readonly artifact: string;
  readonly hwArch: string;
  readonly hwOs: string;
  readonly hwFreeRam: number;
  readonly hwFreeDisk: number;
  readonly transport: 'http' | 'coap';
  /** When the front-end received it, Unix milliseconds (flush lag is measured from here). */
  readonly receivedAtMs: number;
}

/** One accepted update report. */
export interface ReportRecord {
  readonly deviceId: string;
  readonly previousHash: string;
  readonly newHash: string;
  readonly success: boolean;
  readonly rollbackReason: string;
  readonly timestamp: number;
  readonly receivedAtMs: number;
}

/**
 * A rollout target offered to a device (the manifester's answer named it), from the version
 * the heartbeat carried: what makes the device's later report count toward the rollout's health.
 */
export interface OfferRecord {
  readonly deviceId: string;
  readonly targetHash: string;
  readonly fromHash: string;
  /** Unix milliseconds. */
  readonly offeredAtMs: number;
}

/**
 * Heartbeats as they cross from a front-end to the fleet actor: a few compact values instead
 * of an object each, which structured cloning would walk field by field at both ends
 * (fleet-batch.ts packs and unpacks them).
 */
export interface PackedHeartbeats {
  readonly count: number;
  /** Each distinct text of the batch once (device ids, hashes, versions, tracks, hw arch and os). */
  readonly strings: readonly string[];
  /** Per heartbeat, indexes into `strings`: device id, version hash, version, artifact, hw arch, hw os. */
  readonly refs: Uint32Array;
  /** Per heartbeat: free_ram, free_disk, receivedAtMs, transport (0 http, 1 coap). */
  readonly numbers: Float64Array;
}

/** The attributes a heartbeat carried (most carry none, so they travel beside the packed heartbeats, not in them). */
export interface AttributesRecord {
  readonly deviceId: string;
  readonly attributes: Readonly<Record<string, string>>;
}

export interface FleetBatch {
  readonly heartbeats: PackedHeartbeats;
  readonly reports: readonly ReportRecord[];
  /** Left out when no heartbeat of the batch carried attributes. */
  readonly attributes?: readonly AttributesRecord[];
}

/** The admin API's inventory answers (defined in admin-wire.ts, which the console imports). */
export type { DeviceAuthState, DeviceView, FleetReportView, FleetSummary, GroupView, ReportView };
export { DEVICE_AUTH_STATES };

/** `GET /admin/devices`, already validated by the front-end. */
export interface DeviceQuery {
  readonly artifact?: string;
  readonly versionHash?: string;
  /** Only devices whose last_seen is at or after this Unix second. */
  readonly seenSince?: number;
  /** Only devices whose last_seen is before this Unix second (not seen lately). */
  readonly seenBefore?: number;
  readonly limit: number;
  /** Only device ids after this one (the decoded cursor). */
  readonly after?: string;
  /** Only devices in this enrollment state (identities that never sent a heartbeat included). */
  readonly authState?: DeviceAuthState;
  /** Only members of this group (GROUP_NOT_FOUND when there is none). */
  readonly group?: string;
}

/** `POST /admin/tags`, validated: at least one of add and remove. */
export interface TagChange {
  readonly filter: TargetFilter;
  readonly add: readonly string[];
  readonly remove: readonly string[];
}

export interface DevicePage {
  devices: DeviceView[];
  /** The last device id of this page when another page may follow (the front-end encodes it). */
  nextAfter: string | null;
}

/** `GET /admin/reports`, already validated by the front-end. */
export interface ReportQuery {
  readonly success?: boolean;
  /** Only reports of devices on this track. */
  readonly artifact?: string;
  readonly limit: number;
}

export interface RolloutHealthQuery {
  readonly targetHash: string;
  /** Unix milliseconds: only reports received at or after it count. */
  readonly sinceMs: number;
}

export interface RolloutHealth {
  targetHash: string;
  success: number;
  failure: number;
}

export interface FleetApi extends ControlApi, OperatorsApi {
  /** Fire-and-forget from the front-ends: buffered, written by the next flush. */
  record(batch: FleetBatch): void;
  listDevices(query: DeviceQuery): Promise<DevicePage>;
  /** The device and its last 50 reports, newest first; null when unknown. */
  device(deviceId: string): Promise<(DeviceView & { reports: ReportView[] }) | null>;
  summary(artifact: string): Promise<FleetSummary>;
  /** The newest reports first, across devices (the console's failed updates). */
  recentReports(query: ReportQuery): Promise<FleetReportView[]>;
  /**
   * For each target: the latest report per device among those with new_hash = targetHash
   * received at or after `since`, counted by outcome, of devices that were offered the target
   * from the version the report names as left (recordOffers). Pending reports are flushed first.
   */
  rolloutHealth(queries: readonly RolloutHealthQuery[]): Promise<RolloutHealth[]>;
  /** Fire-and-forget from the manifester: the rollout offers it made (written at once, upserted). */
  recordOffers(offers: readonly OfferRecord[]): void;
  /** Writes what is buffered now (tests, drain). */
  flush(): Promise<void>;
  /** Puts events into the webhooks' outbox; durable when it resolves (src/actors/manifester/webhook-events.ts sends them). */
  recordEvents(events: readonly WebhookEvent[]): Promise<void>;
  webhookState(): Promise<WebhookState>;
  /**
   * A verified auth request (signature and clock checked by the front-end): replay, key binding
   * and enrollment state are decided here; throws DEVICE_AUTH_FAILED, DEVICE_NOT_ACCEPTED,
   * DEVICE_KEY_MISMATCH or DEVICE_PENDING_FULL.
   */
  authenticate(request: AuthRequest): Promise<AuthOutcome>;
  /** The token key and revocations; waits (up to 20 s) while `knownVersion` is still current. */
  deviceTrust(knownVersion: string): Promise<DeviceTrust>;
  /**
   * The targeting index by long poll (src/messages/targeting-index.ts): answered at once when
   * the fleet's differs from `known`, else when it changes, or null after 20 s; `known` is also
   * the asking front-end's acknowledgement of what it holds (src/shared/long-poll.ts).
   */
  targetingIndex(poller: string, known: string): Promise<TargetingIndex | null>;
  /** Operator accept or reject; any id can be rejected, accept is DEVICE_NOT_FOUND for an id with no identity. */
  setDeviceState(deviceId: string, action: 'accept' | 'reject'): Promise<DeviceView>;
  preauthorize(devices: readonly PreauthorizedDevice[]): Promise<{ added: number; device_ids: string[] }>;
  /** Forgets the device (inventory, reports, key binding; a rejection stays) and revokes its tokens; false when unknown. */
  deleteDevice(deviceId: string): Promise<boolean>;
  /** Rejects or deletes the live pending enrollments the filter names; the ids, in id order. */
  settlePending(action: 'reject' | 'delete', filter: PendingFilter): Promise<string[]>;
  /** Replaces the device's tags; null for a device the inventory does not hold. */
  setTags(deviceId: string, tags: readonly string[]): Promise<DeviceView | null>;
  /** Adds and removes tags on every device the filter matches; how many it matched. INVALID_FIELD when a device would pass MAX_TAGS. */
  changeTags(change: TagChange): Promise<{ devices: number }>;
  /** Creates or replaces a group. */
  putGroup(name: string, filter: TargetFilter): Promise<GroupView>;
  group(name: string): Promise<GroupView | null>;
  groups(): Promise<GroupView[]>;
  /** The names of every group (no counts): what a publish's group steps are checked against. */
  groupNames(): Promise<string[]>;
  /** Deletes it (the caller has checked that no live rollout names it); null when there was none. */
  deleteGroup(name: string): Promise<GroupView | null>;
}

/** Which pending enrollments a bulk reject or delete takes (`POST /admin/devices/reject|delete`). */
export interface PendingFilter {
  /** Only those that first asked at or after this Unix second. */
  readonly createdSince?: number;
  /** Only ids that begin with this text. */
  readonly idPrefix?: string;
}

export interface PreauthorizedDevice {
  readonly device_id: string;
  readonly public_key: string;
}

export const FLEET_DEADLINES_MS = {
  ...CONTROL_DEADLINES_MS,
  ...OPERATORS_DEADLINES_MS,
  /** Fire-and-forget from the front-ends; the deadline only bounds a lost message. */
  record: 5_000,
  listDevices: 10_000,
  device: 10_000,
  summary: 10_000,
  recentReports: 10_000,
  /** Flushes what is buffered first. */
  rolloutHealth: 10_000,
  /** Fire-and-forget; the deadline only bounds a lost message. */
  recordOffers: 5_000,
  flush: 30_000,
  recordEvents: 10_000,
  webhookState: 10_000,
  authenticate: 10_000,
  /** Answers within 20 s by itself (a long poll). */
  deviceTrust: 30_000,
  targetingIndex: 30_000,
  setDeviceState: 10_000,
  preauthorize: 60_000,
  deleteDevice: 10_000,
  settlePending: 60_000,
  setTags: 10_000,
  /** A bulk change over the whole fleet. */
  changeTags: 60_000,
  putGroup: 10_000,
  group: 10_000,
  /** Counts the members of each group. */
  groups: 30_000,
  groupNames: 10_000,
  deleteGroup: 10_000,
} as const satisfies Deadlines<FleetApi>;

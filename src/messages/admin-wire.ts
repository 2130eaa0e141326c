// The admin API's JSON answers, as the server sends them (docs/fleet.md, docs/rollouts.md):
// defined once here, with no import, so the operator console (console/src/types.ts) takes them
// with `import type` and never copies them. src/messages/manifester.ts and fleet.ts re-export
// the ones their actors' APIs return.

/** One track as `GET /admin/artifacts` lists it (docs/operations.md, "List tracks"), plus the path it came from. */
export interface TrackView {
  artifact: string;
  name: string;
  os: string;
  arch: string;
  version: string;
  hash: string;
  size: number;
  source: 'config' | 'api';
  /** Server-side path the track is published from, and watched. */
  binary: string;
  /** Superseded target hashes, newest first (delta sources). */
  history: string[];
  /** The track's staged rollout, or null when its target went to every device at once. */
  rollout: RolloutView | null;
  /** The sequence of the target's release statement; it rises with every change of what the track serves. */
  sequence: number;
}

/** A staged rollout as the admin API shows it (docs/rollouts.md, "Watching it"). */
export interface RolloutView {
  target_hash: string;
  target_version: string;
  /** The last target of the track that reached 100 %; null when none did yet. */
  stable_hash: string | null;
  percent: number;
  /** As given: percents and `{"group":"NAME"}` steps. */
  steps: (number | { group: string })[];
  /** The index in `steps` of the step reached. */
  step: number;
  /** Echoed as given (a duration, or "manual"). */
  step_interval: string;
  /** Unix seconds; null when none was given. */
  start_at: number | null;
  window: { days: string[]; start: string; end: string; tz: string } | null;
  max_failure_rate: number;
  min_reports: number;
  state: 'scheduled' | 'running' | 'paused' | 'complete' | 'aborted';
  paused_reason: 'failure_rate' | 'operator' | null;
  /** Aborted with rollback: devices on the target are offered the stable target. */
  rollback: boolean;
  /** Boot-confirmed reports counted toward an automatic pause (since the start or the last resume). */
  reports: { success: number; failure: number };
  /** Unix seconds. */
  started_at: number;
  /** Running: when the timer steps next (a due step waits for the window to open; null for manual steps); scheduled: when it starts. */
  next_step_at: number | null;
}

export interface TrackListing {
  /** The track that answers heartbeats naming no artifact; '' when there is none. */
  default: string;
  artifacts: TrackView[];
}

/** How a device last reached the server. */
export type Transport = 'http' | 'coap';

/** A device as the admin API shows it (docs/fleet.md, "Devices"). Times are Unix seconds. */
export interface DeviceView {
  device_id: string;
  artifact: string;
  version_hash: string;
  version: string;
  hw_info: { arch: string; os: string; free_ram: number; free_disk: number };
  /** '' for a device known only by its identity (it authenticated but sent no heartbeat yet). */
  transport: Transport | '';
  first_seen: number;
  last_seen: number;
  last_report: { success: boolean; new_hash: string; rollback_reason: string; at: number } | null;
  /** Device identity (devices.auth); null for a device that never authenticated. Set by the fleet actor on every answer. */
  auth_state?: DeviceAuthState | null;
  public_key?: string | null;
  /** What the device said of itself in its latest heartbeat that carried attributes; {} when none ever did. Set by the fleet actor on every answer. */
  attributes?: Record<string, string>;
  /** The operator's tags, sorted. Set by the fleet actor on every answer. */
  tags?: string[];
}

/** A group (`GET /admin/groups/{name}`): a named filter and how many devices match it now. */
export interface GroupView {
  name: string;
  filter: Record<string, unknown>;
  devices: number;
}

export type DeviceAuthState = 'pending' | 'accepted' | 'rejected' | 'preauthorized';
export const DEVICE_AUTH_STATES: readonly DeviceAuthState[] = ['pending', 'accepted', 'rejected', 'preauthorized'];

export interface ReportView {
  previous_hash: string;
  new_hash: string;
  success: boolean;
  rollback_reason: string;
  timestamp: number;
  received_at: number;
}

/** A report with the device it came from and that device's track ('' for a device never seen by a heartbeat). */
export interface FleetReportView extends ReportView {
  device_id: string;
  artifact: string;
}

/** `GET /admin/fleet` without its `rollout` field (the manifester's part). */
export interface FleetSummary {
  artifact: string;
  devices: number;
  versions: { version_hash: string; version: string; devices: number }[];
  reports_24h: { success: number; failure: number };
}

/** `GET /admin/devices`: one page, and the cursor of the next one (null on the last page). */
export interface DeviceListing {
  devices: DeviceView[];
  next: string | null;
}

/** `GET /admin/devices/{id}`: the device with its latest reports, newest first. */
export interface DeviceDetail extends DeviceView {
  reports: ReportView[];
}

/** `GET /admin/reports`. */
export interface ReportListing {
  reports: FleetReportView[];
}

/** `GET /admin/fleet`: the inventory of a track (the fleet actor) and its rollout (the manifester). */
export interface FleetView extends FleetSummary {
  rollout: RolloutView | null;
}

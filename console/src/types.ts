// The shapes of the admin API answers the console reads (docs/fleet.md, docs/rollouts.md).
// Fields a server may leave out are optional here, so the views never assume them.

export interface Track {
  artifact: string;
  name: string;
  os: string;
  arch: string;
  version: string;
  hash: string;
  size: number;
  source: 'config' | 'api';
  history: string[];
  stable_hash?: string | null;
  rollout?: Rollout | null;
}

export interface TrackList {
  default: string;
  artifacts: Track[];
}

export type RolloutState = 'running' | 'paused' | 'complete' | 'aborted';

export interface Rollout {
  target_hash: string;
  target_version: string;
  stable_hash: string | null;
  percent: number;
  steps: number[];
  step_interval: string;
  state: RolloutState;
  paused_reason: 'failure_rate' | 'operator' | null;
  reports: { success: number; failure: number };
  next_step_at: number | null;
  max_failure_rate?: number;
  min_reports?: number;
  /** Aborted with roll back: devices on the target are offered the stable target. */
  rollback?: boolean;
  started_at?: number;
}

export interface Fleet {
  artifact: string;
  devices: number;
  versions: { version_hash: string; version: string; devices: number }[];
  reports_24h: { success: number; failure: number };
  rollout: Rollout | null;
}

export interface LastReport {
  success: boolean;
  new_hash: string;
  rollback_reason: string;
  at: number;
}

export interface Device {
  device_id: string;
  artifact: string;
  version_hash: string;
  version: string;
  hw_info: { arch: string; os: string; free_ram: number; free_disk: number };
  transport: 'http' | 'coap';
  first_seen: number;
  last_seen: number;
  last_report: LastReport | null;
  /** Device identity (devices.auth); null for a device that never authenticated. */
  auth_state?: 'pending' | 'accepted' | 'rejected' | 'preauthorized' | null;
  public_key?: string | null;
}

export interface DevicePage {
  devices: Device[];
  next: string | null;
}

export interface Report {
  previous_hash: string;
  new_hash: string;
  success: boolean;
  rollback_reason: string;
  timestamp: number;
  received_at: number;
}

export interface DeviceDetail extends Device {
  reports: Report[];
}

/** A report from GET /admin/reports: with its device and that device's track. */
export interface FleetReport extends Report {
  device_id: string;
  artifact: string;
}

import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';
import { storedValue } from '../../../shared/targeting/attributes.js';

// What both engines' flushes (store.ts) compute the same way in JavaScript.

export const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * A device's free texts (version, hardware, rollback reason) as both engines store them, as
 * attribute values are (storedValue): U+0000 and unpaired surrogates as U+FFFD. The device
 * boundary checks these texts for length only; PostgreSQL's text cannot hold U+0000 (one such
 * record refused the whole flush, and every flush after it), and UTF-8 cannot carry a lone
 * surrogate (node-postgres sent U+FFFD, better-sqlite3 its own three bytes, shown as three).
 */
const storable = (text: string) => !text.includes('\0') && text.isWellFormed();
const heartbeatStorable = (r: HeartbeatRecord) => storable(r.version) && storable(r.hwArch) && storable(r.hwOs);

/** The heartbeats and reports with their texts storable on both engines (the same arrays when they are, nearly always). */
export function storableRecords(heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]): [readonly HeartbeatRecord[], readonly ReportRecord[]] {
  const cleanHeartbeats = heartbeats.every(heartbeatStorable) ? heartbeats
    : heartbeats.map((r) => (heartbeatStorable(r) ? r : { ...r, version: storedValue(r.version), hwArch: storedValue(r.hwArch), hwOs: storedValue(r.hwOs) }));
  const cleanReports = reports.every((r) => storable(r.rollbackReason)) ? reports
    : reports.map((r) => (storable(r.rollbackReason) ? r : { ...r, rollbackReason: storedValue(r.rollbackReason) }));
  return [cleanHeartbeats, cleanReports];
}

/** One count of fleet_versions to add to (a device arrived) or take from (a device left). */
export interface VersionMove {
  artifact: string;
  version_hash: string;
  /** The version text of the arriving devices ('' for a departure). */
  version: string;
  devices: number;
}

/** The fleet_versions moves of one flush, summed per (track, hash). */
export class VersionMoves {
  private readonly moves = new Map<string, VersionMove>();

  /** A device now at `to`, and before at `from` (undefined: a device never recorded). */
  device(from: { artifact: string; version_hash: string } | undefined, to: HeartbeatRecord): void {
    if (from && from.artifact === to.artifact && from.version_hash === to.versionHash) return;
    if (from) this.add(from.artifact, from.version_hash, '', -1);
    this.add(to.artifact, to.versionHash, to.version, +1);
  }

  get gained(): VersionMove[] {
    return [...this.moves.values()].filter((m) => m.devices > 0);
  }

  get lost(): VersionMove[] {
    return [...this.moves.values()].filter((m) => m.devices < 0);
  }

  private add(artifact: string, hash: string, version: string, by: number): void {
    const key = `${artifact}\n${hash}`;
    const move = this.moves.get(key) ?? { artifact, version_hash: hash, version, devices: 0 };
    move.devices += by;
    if (by > 0) move.version = version;
    this.moves.set(key, move);
  }
}

/** Each reporting device's newest report of the flush (reports arrive in order). */
export function latestReports(reports: readonly ReportRecord[]): ReportRecord[] {
  const latest = new Map<string, ReportRecord>();
  for (const r of reports) latest.set(r.deviceId, r);
  return [...latest.values()];
}

/** Whether two records are on the same track, hash and version text. */
const sameVersion = (a: HeartbeatRecord, b: HeartbeatRecord) => a.artifact === b.artifact && a.versionHash === b.versionHash && a.version === b.version;

/**
 * The heartbeats by track, hash and version text, largest group first, each in the order of
 * the heartbeats: both engines touch a group's devices with those three texts bound once.
 */
export function versionGroups(heartbeats: readonly HeartbeatRecord[]): HeartbeatRecord[][] {
  const byKey = new Map<string, HeartbeatRecord[]>();
  let last: HeartbeatRecord[] | undefined;
  for (const r of heartbeats) {
    // Neighbours mostly share a version: the key is built only when it changes.
    if (last && sameVersion(last[0]!, r)) {
      last.push(r);
      continue;
    }
    const key = `${r.artifact}\n${r.versionHash}\n${r.version}`;
    last = byKey.get(key);
    if (last) last.push(r);
    else byKey.set(key, (last = [r]));
  }
  return [...byKey.values()].sort((a, b) => b.length - a.length);
}

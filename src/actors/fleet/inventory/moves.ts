import type { HeartbeatRecord, ReportRecord } from '../../../messages/fleet.js';

// What both engines' flushes (store.ts) compute the same way in JavaScript.

export const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * A device's free text as both engines store it: U+0000 as U+FFFD. The device boundary checks
 * these texts (version, hardware, rollback reason, attribute values) for length only, and
 * PostgreSQL's text cannot hold U+0000: one such record refused the whole flush, and every
 * flush after it, while SQLite kept the character.
 */
export function storableText(text: string): string {
  return text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text;
}

const heartbeatStorable = (r: HeartbeatRecord) => !r.version.includes('\0') && !r.hwArch.includes('\0') && !r.hwOs.includes('\0');

/** The heartbeats and reports with their texts storable on both engines (the same arrays when they are, nearly always). */
export function storableRecords(heartbeats: readonly HeartbeatRecord[], reports: readonly ReportRecord[]): [readonly HeartbeatRecord[], readonly ReportRecord[]] {
  const cleanHeartbeats = heartbeats.every(heartbeatStorable) ? heartbeats
    : heartbeats.map((r) => (heartbeatStorable(r) ? r : { ...r, version: storableText(r.version), hwArch: storableText(r.hwArch), hwOs: storableText(r.hwOs) }));
  const cleanReports = reports.every((r) => !r.rollbackReason.includes('\0')) ? reports
    : reports.map((r) => (r.rollbackReason.includes('\0') ? { ...r, rollbackReason: storableText(r.rollbackReason) } : r));
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

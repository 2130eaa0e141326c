import { inCohort } from '../../src/shared/decision/cohort.js';
import { postJson } from './http.js';

// Heartbeats from named devices, and device ids chosen inside or outside a rollout's cohort.

export async function deviceHeartbeat(baseUrl: string, deviceId: string, versionHash: string, artifact?: string, deltaFormats?: string[]): Promise<{ status: number; json: any }> {
  return postJson(`${baseUrl}/heartbeat`, {
    device_id: deviceId,
    version_hash: versionHash,
    hw_info: { arch: 'amd64', os: 'linux', free_ram: 1 << 28, free_disk: 1 << 30 },
    timestamp: Math.floor(Date.now() / 1000),
    version: '1.0.0',
    ...(artifact !== undefined ? { artifact } : {}),
    ...(deltaFormats ? { delta_formats: deltaFormats } : {}),
  });
}

/** The first `count` ids of the form `prefix-N` that are (or are not) in the cohort of `target` at `percent`. */
export function cohortIds(target: string, percent: number, inside: boolean, count = 1, prefix = 'dev'): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) {
    const id = `${prefix}-${i}`;
    if (inCohort(id, target, percent) === inside) ids.push(id);
    if (i > 1_000_000) throw new Error('no such device id');
  }
  return ids;
}

import { stat } from 'node:fs/promises';
import type { HeartbeatRecord } from '../../src/messages/fleet.js';
import { openDatabase } from '../../src/shared/database/connect.js';
import * as q from '../../src/actors/fleet/inventory/queries.js';

// The fleet database's page cache is a budget like the others (SQLITE_PAGE_CACHE_KIB, counted
// in the memory bound), and it fills only with the pages that are read or written. The soak's
// own 10,000 devices and their reports make a database of a few MB that grows by about
// 0.35 MB a minute, so left alone the cache grows through the whole window (and RSS with it)
// toward a budget it never reaches. So once the server's idle RSS is measured the inventory
// is seeded past the cache, through the query layer on a connection of its own, and the fill
// reads all of it through the admin API, as an operator paging through the fleet does.

/** Devices seeded: about 45 MB of database, past the 16 MB cache. */
export const SEEDED_DEVICES = 120_000;
/** Their track, which the soak never publishes: they stay out of every rollout's counts. */
const SEEDED_TRACK = 'inventory-seed';

/** Writes `count` devices, `device(i)` each, through the query layer in large transactions (the fleet bench seeds with it too). */
export async function seedDevices(location: string, count: number, device: (i: number, now: number) => HeartbeatRecord): Promise<void> {
  if (count <= 0) return;
  const { db, close } = await openDatabase(location);
  try {
    const now = Date.now();
    const BATCH = 20_000;
    for (let start = 0; start < count; start += BATCH) {
      const batch: HeartbeatRecord[] = [];
      for (let i = start; i < Math.min(count, start + BATCH); i++) batch.push(device(i, now));
      await q.writeBatch(db, batch, []);
    }
  } finally {
    await close();
  }
}

export function seedInventory(location: string, count: number): Promise<void> {
  return seedDevices(location, count, (i, now) => ({
    deviceId: `seeded-${String(i).padStart(7, '0')}`, versionHash: String(i % 4).repeat(64), version: `0.${i % 4}.0`, artifact: SEEDED_TRACK,
    hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1 << 28, hwFreeDisk: 1 << 30, transport: 'http', receivedAtMs: now - (i % 86_400) * 1000,
  }));
}

/** Pages through GET /admin/devices to the end; the number of devices listed. */
export async function readInventory(url: string, token: string): Promise<number> {
  let listed = 0;
  let after: string | null = '';
  while (after !== null) {
    const query: string = after === '' ? '' : `&after=${encodeURIComponent(after)}`;
    const response = await fetch(`${url}/admin/devices?limit=1000${query}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000) });
    if (!response.ok) throw new Error(`GET /admin/devices answered ${response.status}`);
    const page = (await response.json()) as { devices: unknown[]; next: string | null };
    listed += page.devices.length;
    after = page.next;
  }
  return listed;
}

/** The database's bytes on disk (its file and its write-ahead log). */
export async function databaseBytes(location: string): Promise<number> {
  let bytes = 0;
  for (const file of [location, `${location}-wal`]) bytes += await stat(file).then((s) => s.size, () => 0);
  return bytes;
}

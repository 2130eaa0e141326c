import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { InventoryEntry, StoreInventory } from '../../messages/store.js';
import { TEMP_PREFIX } from '../../shared/durable-file.js';
import { parseBinaryName, type StoreLayout } from '../../shared/store-layout.js';

/** Lists both directories with sizes and modification times; temporaries are not listed. */
export async function listInventory(layout: StoreLayout): Promise<StoreInventory> {
  const derived = await listDir(layout.deltas);
  const binaries = (await listDir(layout.binaries)).flatMap((entry) => {
    const hash = parseBinaryName(entry.name);
    return hash ? [{ ...entry, hash }] : [];
  });
  return { derived, binaries };
}

async function listDir(dir: string): Promise<InventoryEntry[]> {
  const entries: InventoryEntry[] = [];
  for (const name of await readdir(dir)) {
    if (name.startsWith(TEMP_PREFIX)) continue;
    try {
      const info = await stat(join(dir, name));
      if (info.isFile()) entries.push({ name, size: info.size, mtimeMs: info.mtimeMs });
    } catch {
      // Removed between readdir and stat: nothing to list.
    }
  }
  return entries;
}

/** Unlinks a file; an open download keeps reading it until it finishes (POSIX semantics). */
export async function unlinkIfPresent(path: string): Promise<number> {
  try {
    const { size } = await stat(path);
    await unlink(path);
    return size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}

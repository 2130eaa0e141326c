import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BinaryInfo, TransferInfo } from '../../messages/store.js';
import { removeLeftoverTemps } from '../../shared/durable-file.js';
import { formatField } from '../../shared/delta-formats.js';
import type { Logger } from '../../shared/logger.js';
import { parseBinaryName, parseDerivedName, type StoreLayout } from '../../shared/store-layout.js';
import { binaryMismatch, derivedCheck, quarantine } from './verify.js';

export interface ScannedStore {
  binaries: BinaryInfo[];
  transfers: TransferInfo[];
}

/**
 * Prepares the store directories after a start or a crash (removes temporaries and the diff
 * scratch space), unless the store is read-only; then indexes the files. Every file is checked
 * against its name first (a disk that filled up under an older version, or outside hands, may
 * have left one cut short): one that does not fit is moved aside and never indexed, so it is
 * never served or signed.
 */
export async function openStoreDirs(storeDir: string, layout: StoreLayout, writable: boolean, log: Logger, shared = false): Promise<ScannedStore> {
  if (writable) await (shared ? tidyShared(layout, log) : tidy(layout, log));

  const binaries: BinaryInfo[] = [];
  for (const name of await listOrEmpty(layout.binaries)) {
    const hash = parseBinaryName(name);
    if (!hash) continue;
    const path = join(layout.binaries, name);
    if (!(await stat(path)).isFile()) continue;
    const mismatch = await binaryMismatch(path, hash);
    if (mismatch) await quarantine(storeDir, layout.binaries, name, mismatch, log);
    else binaries.push({ hash, size: (await stat(path)).size });
  }
  const sizes = new Map(binaries.map((b) => [b.hash, b.size]));

  const transfers: TransferInfo[] = [];
  for (const name of await listOrEmpty(layout.deltas)) {
    const parsed = parseDerivedName(name);
    if (!parsed) {
      log.debug({ file: name }, 'ignoring a file whose name is not a derived file');
      continue;
    }
    const path = join(layout.deltas, name);
    if (!(await stat(path)).isFile()) continue;
    const checked = await derivedCheck(path, parsed, sizes.get(parsed.to));
    if ('mismatch' in checked) {
      await quarantine(storeDir, layout.deltas, name, checked.mismatch, log);
      continue;
    }
    const { hash, size } = checked;
    transfers.push(parsed.kind === 'delta' ? { kind: 'delta', from: parsed.from, to: parsed.to, ...formatField(parsed.format), size, hash } : { kind: 'full', to: parsed.to, size, hash });
  }
  return { binaries, transfers };
}

async function tidy(layout: StoreLayout, log: Logger): Promise<void> {
  for (const dir of [layout.binaries, layout.deltas, layout.work]) await mkdir(dir, { recursive: true });
  await rm(layout.work, { recursive: true, force: true });
  await mkdir(layout.work, { recursive: true });
  const leftovers = (await removeLeftoverTemps(layout.binaries)) + (await removeLeftoverTemps(layout.deltas));
  if (leftovers > 0) log.warn({ leftovers }, 'removed temporary files left by an interrupted write');
}

/**
 * A store shared by replicas (cluster mode): another replica may be writing temporaries right
 * now, so only those untouched for STALE_TEMP_MS are left from a crash. Generation scratch
 * directories (`work/gen/{name}`) are cleared by whichever replica takes that name's lock next.
 */
async function tidyShared(layout: StoreLayout, log: Logger): Promise<void> {
  for (const dir of [layout.binaries, layout.deltas, layout.work]) await mkdir(dir, { recursive: true });
  const leftovers = (await removeLeftoverTemps(layout.binaries, STALE_TEMP_MS)) + (await removeLeftoverTemps(layout.deltas, STALE_TEMP_MS));
  if (leftovers > 0) log.warn({ leftovers }, 'removed temporary files left by an interrupted write');
}

/** A temporary nobody wrote to for this long in a shared store was left by a crash. */
const STALE_TEMP_MS = 60 * 60_000;

/** A read-only store that was never written has no directories: it serves nothing. */
async function listOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

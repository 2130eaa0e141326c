import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BinaryInfo, TransferInfo } from '../../messages/store.js';
import { removeLeftoverTemps } from '../../shared/durable-file.js';
import { sha256File } from '../../shared/hash.js';
import type { Logger } from '../../shared/logger.js';
import { parseBinaryName, parseDerivedName, type StoreLayout } from '../../shared/store-layout.js';

export interface ScannedStore {
  binaries: BinaryInfo[];
  transfers: TransferInfo[];
}

/**
 * Prepares the store directories after a start or a crash: removes temporaries and the diff
 * scratch space, then indexes the files. Derived files are hashed here because their hash is
 * what manifests sign; binaries are trusted by name and verified when a diff reads them.
 */
export async function openStoreDirs(layout: StoreLayout, log: Logger): Promise<ScannedStore> {
  for (const dir of [layout.binaries, layout.deltas, layout.work]) await mkdir(dir, { recursive: true });
  await rm(layout.work, { recursive: true, force: true });
  await mkdir(layout.work, { recursive: true });
  const leftovers = (await removeLeftoverTemps(layout.binaries)) + (await removeLeftoverTemps(layout.deltas));
  if (leftovers > 0) log.warn({ leftovers }, 'removed temporary files left by an interrupted write');

  const binaries: BinaryInfo[] = [];
  for (const name of await readdir(layout.binaries)) {
    const hash = parseBinaryName(name);
    if (!hash) continue;
    const info = await stat(join(layout.binaries, name));
    if (info.isFile()) binaries.push({ hash, size: info.size });
  }

  const transfers: TransferInfo[] = [];
  for (const name of await readdir(layout.deltas)) {
    const parsed = parseDerivedName(name);
    if (!parsed) {
      log.debug({ file: name }, 'ignoring a file whose name is not a derived file');
      continue;
    }
    const path = join(layout.deltas, name);
    if (!(await stat(path)).isFile()) continue;
    const { hash, size } = await sha256File(path);
    transfers.push(parsed.kind === 'delta' ? { kind: 'delta', from: parsed.from, to: parsed.to, size, hash } : { kind: 'full', to: parsed.to, size, hash });
  }
  return { binaries, transfers };
}

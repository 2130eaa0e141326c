import { opendir, realpath, stat } from 'node:fs/promises';
import { dirname, relative, isAbsolute, join } from 'node:path';
import type { Config } from '../../shared/config/types.js';
import { engineOf } from '../../shared/database/location.js';
import { UpdaterError, isUpdaterError } from '../../shared/errors.js';

// What an admin publish may read. A published file becomes downloadable by anyone at
// /binary/{hash}, so the path is a disclosure decision: only files below `store.publish_roots`
// or a configured artifact's directory, and never the server's own secrets or state, whatever
// the roots say. Paths are compared real (symlinks resolved), so a link inside a root that
// points at /etc/shadow or the signing key is refused; and files are compared by device and
// inode, so a hard link to the signing key inside a root (`ln keys/signing.key builds/x`),
// which has a real path of its own, is refused too.

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

async function real(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    // A root or own file that does not exist (yet) is compared as written.
    return path;
  }
}

/** A file's identity: two paths name the same file exactly when these agree. */
interface FileId {
  readonly dev: bigint;
  readonly ino: bigint;
}

async function fileId(path: string): Promise<(FileId & { nlink: bigint }) | undefined> {
  try {
    const s = await stat(path, { bigint: true });
    return { dev: s.dev, ino: s.ino, nlink: s.nlink };
  } catch {
    return undefined;
  }
}

const same = (a: FileId, b: FileId) => a.dev === b.dev && a.ino === b.ino;

/** The server's own files outside the store (by name; each also holds under every other name it has). */
function ownFiles(config: Config): [string, string | undefined][] {
  const sqlite = engineOf(config.database) === 'sqlite' ? config.database : undefined;
  return [
    ['the signing key', config.signing.privateKeyFile],
    ['the admin token file', config.admin.tokenFile],
    ['the state file', config.store.stateFile],
    ['the configuration file', config.configPath],
    ['the TLS private key', config.tls?.keyFile],
    ['the database', sqlite],
    // SQLite's write-ahead log and shared memory hold recent rows the main file does not yet.
    ['the database\'s write-ahead log', sqlite && `${sqlite}-wal`],
    ['the database\'s shared-memory file', sqlite && `${sqlite}-shm`],
    ['the database\'s rollback journal', sqlite && `${sqlite}-journal`],
  ];
}

/**
 * Whether a file below `dir` is the file `id` (a hard link into the store). Walks the store
 * only for a candidate with more than one link on the store's device, which a file copied or
 * built into a publish root is not.
 */
async function linkedInto(dir: string, id: FileId): Promise<boolean> {
  let entries;
  try {
    entries = await opendir(dir);
  } catch {
    return false;
  }
  for await (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (await linkedInto(path, id)) return true;
    } else if (entry.isFile()) {
      const other = await fileId(path);
      if (other && same(other, id)) return true;
    }
  }
  return false;
}

/**
 * Resolves `path` and checks it against the publish rules. Returns the real path, which the
 * caller reads (so a link swapped after the check is not followed to somewhere else).
 */
export async function checkPublishPath(path: string, config: Config): Promise<string> {
  let resolved: string;
  try {
    resolved = await realpath(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UpdaterError('SOURCE_UNREADABLE', `cannot read ${path}: ${code}`, { path });
  }
  const candidate = await fileId(resolved);
  for (const [what, file] of ownFiles(config)) {
    if (!file) continue;
    if (resolved === (await real(file))) refuse(path, `it is ${what}`);
    const own = candidate && (await fileId(file));
    if (own && same(own, candidate)) refuse(path, `it is a hard link to ${what}`);
  }
  const storeDir = await real(config.store.dir);
  if (inside(storeDir, resolved)) refuse(path, 'it is inside store.dir');
  if (candidate && candidate.nlink > 1n && (await fileId(storeDir))?.dev === candidate.dev && (await linkedInto(storeDir, candidate))) {
    refuse(path, 'it is a hard link to a file inside store.dir');
  }

  const roots = [...config.store.publishRoots, ...config.artifacts.map((a) => dirname(a.binary))];
  for (const root of roots) {
    if (inside(await real(root), resolved)) return resolved;
  }
  return refuse(path, roots.length === 0
    ? 'store.publish_roots is empty and no configured artifact names a directory'
    : `it is outside store.publish_roots and the configured artifacts' directories (${roots.join(', ')})`);
}

function refuse(path: string, why: string): never {
  throw new UpdaterError('PUBLISH_PATH_FORBIDDEN', `refusing to publish ${path}: ${why}`, { path });
}

/** Refuses anything that is not a readable regular file before the store opens it (a FIFO would hang a read). */
export async function assertRegularFile(path: string): Promise<void> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new UpdaterError('SOURCE_UNREADABLE', `${path} is not a regular file`, { path });
  } catch (err) {
    if (isUpdaterError(err)) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UpdaterError('SOURCE_UNREADABLE', `cannot read ${path}: ${code}`, { path });
  }
}

import { realpath, stat } from 'node:fs/promises';
import { dirname, relative, isAbsolute } from 'node:path';
import type { BinaryInfo } from '../../messages/store.js';
import type { Config } from '../../shared/config/types.js';
import { UpdaterError, isUpdaterError } from '../../shared/errors.js';
import type { StoreAccess } from './store-access.js';
import { fileId, identityOf, ownFiles, protectedInode, realOrAsWritten as real, type FileIdentity } from '../../shared/protected-files.js';

// What an admin publish may read. A published file becomes downloadable by anyone at
// /binary/{hash}, so the path is a disclosure decision: only files below `store.publish_roots`
// or a configured artifact's directory, and never the server's own secrets or state, whatever
// the roots say. Paths are compared real (symlinks resolved), so a link inside a root that
// points at /etc/shadow or the signing key is refused; and files are compared by device and
// inode (src/shared/protected-files.ts), so a hard link to the signing key inside a root
// (`ln keys/signing.key builds/x`), which has a real path of its own, is refused too. The
// store-keeper checks the descriptor it opens against the identity returned here.

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** A checked path: the real path to read, and the file it was when checked. */
export interface CheckedPath {
  readonly path: string;
  readonly identity: FileIdentity;
}

/**
 * Resolves `path` and checks it against the publish rules. Returns the real path, which the
 * caller reads (so a link swapped after the check is not followed to somewhere else), and the
 * device and inode checked, which the store-keeper holds the descriptor it opens to.
 */
export async function checkPublishPath(path: string, config: Config): Promise<CheckedPath> {
  let resolved: string;
  try {
    resolved = await realpath(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UpdaterError('SOURCE_UNREADABLE', `cannot read ${path}: ${code}`, { path });
  }
  for (const [what, file] of ownFiles(config)) {
    if (file && resolved === (await real(file))) refuse(path, `it is ${what}`);
  }
  if (inside(await real(config.store.dir), resolved)) refuse(path, 'it is inside store.dir');
  const candidate = await fileId(resolved);
  if (!candidate) throw new UpdaterError('SOURCE_UNREADABLE', `cannot read ${path}: it went away`, { path });
  const linked = await protectedInode(candidate, config);
  if (linked) refuse(path, linked);

  const roots = [...config.store.publishRoots, ...config.artifacts.map((a) => dirname(a.binary))];
  for (const root of roots) {
    if (inside(await real(root), resolved)) return { path: resolved, identity: identityOf(candidate) };
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

/**
 * Streams the file a publish names into the store. A path the configuration names for the
 * track is the operator's own; any other came through the API and passes the rules above.
 */
export async function storePublishedFile(key: string, path: string, config: Config, store: StoreAccess): Promise<BinaryInfo> {
  if (path === config.artifacts.find((a) => a.key === key)?.binary) {
    await assertRegularFile(path);
    return store.registerBinary(path);
  }
  const checked = await checkPublishPath(path, config);
  await assertRegularFile(checked.path);
  return store.registerBinary(checked.path, checked.identity);
}

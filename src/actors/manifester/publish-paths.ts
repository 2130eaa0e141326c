import { realpath, stat } from 'node:fs/promises';
import { dirname, relative, isAbsolute } from 'node:path';
import type { Config } from '../../shared/config/types.js';
import { UpdaterError, isUpdaterError } from '../../shared/errors.js';

// What an admin publish may read. A published file becomes downloadable by anyone at
// /binary/{hash}, so the path is a disclosure decision: only files below `store.publish_roots`
// or a configured artifact's directory, and never the server's own secrets or state, whatever
// the roots say. Every check is on the real path (symlinks resolved), so a link inside a root
// that points at /etc/shadow or the signing key is refused too.

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
  const own: [string, string | undefined][] = [
    ['the signing key', config.signing.privateKeyFile],
    ['the admin token file', config.admin.tokenFile],
    ['the state file', config.store.stateFile],
    ['the configuration file', config.configPath],
  ];
  for (const [what, file] of own) {
    if (file && resolved === (await real(file))) refuse(path, `it is ${what}`);
  }
  if (inside(await real(config.store.dir), resolved)) refuse(path, 'it is inside store.dir');

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

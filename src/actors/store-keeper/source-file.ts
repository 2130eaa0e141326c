import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { Config } from '../../shared/config/types.js';
import { UpdaterError } from '../../shared/errors.js';
import { isIdentity, protectedInode, type FileIdentity } from '../../shared/protected-files.js';

// The file a publish reads, opened once and checked by its descriptor. The manifester checked
// the path (src/actors/manifester/publish-paths.ts), but the path can be swapped between that
// check and this open, say for a hard link to the signing key. What the descriptor reads is
// what gets stored and served, so its own fstat decides: a file the server protects, or any
// file but the one the manifester checked, is refused with the same code, and nothing is read.

export interface SourceFile {
  readonly path: string;
  /** The device and inode the manifester's publish check passed; absent for a configured artifact's path. */
  readonly expected?: FileIdentity | undefined;
  readonly config: Config;
}

/** Opens `source.path` for reading and checks the open descriptor; the caller closes it. */
export async function openVerified(source: SourceFile): Promise<FileHandle> {
  const { path } = source;
  let handle: FileHandle;
  try {
    // Non-blocking: a FIFO swapped in after the manifester's check must not hang the open.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UpdaterError('SOURCE_UNREADABLE', `cannot read ${path}: ${code}`, { path });
  }
  try {
    const opened = await handle.stat({ bigint: true });
    if (!opened.isFile()) throw new UpdaterError('SOURCE_UNREADABLE', `${path} is not a regular file`, { path });
    if (source.expected && !isIdentity(opened, source.expected)) {
      forbid(path, 'it was replaced by another file after it was checked');
    }
    const why = await protectedInode({ dev: opened.dev, ino: opened.ino, nlink: opened.nlink }, source.config);
    if (why) forbid(path, why);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

function forbid(path: string, why: string): never {
  throw new UpdaterError('PUBLISH_PATH_FORBIDDEN', `refusing to publish ${path}: ${why}`, { path });
}

import { opendir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from './config/types.js';
import { engineOf } from './database/location.js';

// The files an admin publish must never read: the server's own secrets and state, and the
// store's files. A published file becomes downloadable by anyone, so the manifester checks a
// path against these before it asks the store-keeper to read it, and the store-keeper checks
// the descriptor it opened again (a path can be swapped for a hard link between the two).
// Files are compared by device and inode: a hard link to the signing key has a real path of
// its own, and only its inode gives it away.

/** A file's identity: two paths name the same file exactly when these agree. */
export interface FileId {
  readonly dev: bigint;
  readonly ino: bigint;
}

/** A file's identity as it travels in a message (decimal strings: messages may be JSON). */
export interface FileIdentity {
  readonly dev: string;
  readonly ino: string;
}

export const identityOf = (id: FileId): FileIdentity => ({ dev: String(id.dev), ino: String(id.ino) });
export const sameFile = (a: FileId, b: FileId) => a.dev === b.dev && a.ino === b.ino;
export const isIdentity = (a: FileId, b: FileIdentity) => String(a.dev) === b.dev && String(a.ino) === b.ino;

export async function fileId(path: string): Promise<(FileId & { nlink: bigint }) | undefined> {
  try {
    const s = await stat(path, { bigint: true });
    return { dev: s.dev, ino: s.ino, nlink: s.nlink };
  } catch {
    return undefined;
  }
}

/** A path that does not exist (yet) is compared as written. */
export async function realOrAsWritten(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return path;
  }
}

/** The server's own files outside the store (by name; each also holds under every other name it has). */
export function ownFiles(config: Config): [string, string | undefined][] {
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
    // A webhook's secret signs what receivers believe: served by hash, anyone could forge events.
    ...config.webhooks.map((w, i): [string, string] => [`the secret file of webhooks[${i}]`, w.secretFile]),
  ];
}

/**
 * Why the file `id` is one the server protects, or undefined when it is none of them: one of
 * the server's own files under any of its names, or a hard link to a file inside store.dir.
 * The store is walked only for a file with more than one link on the store's device, which a
 * file copied or built into a publish root is not.
 */
export async function protectedInode(id: FileId & { nlink: bigint }, config: Config): Promise<string | undefined> {
  for (const [what, file] of ownFiles(config)) {
    const own = file && (await fileId(file));
    if (own && sameFile(own, id)) return `it is a hard link to ${what}`;
  }
  const storeDir = await realOrAsWritten(config.store.dir);
  if (id.nlink > 1n && (await fileId(storeDir))?.dev === id.dev && (await linkedInto(storeDir, id))) {
    return 'it is a hard link to a file inside store.dir';
  }
  return undefined;
}

/** Whether a file below `dir` is the file `id`. */
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
      if (other && sameFile(other, id)) return true;
    }
  }
  return false;
}

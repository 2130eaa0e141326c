import { basename, dirname, join } from 'node:path';
import { open, rm, stat } from 'node:fs/promises';
import type { BinaryInfo, UploadEnd, UploadSlot } from '../../messages/store.js';
import { openTemp, publishNoOverwrite } from '../../shared/durable-file.js';
import { UpdaterError } from '../../shared/errors.js';
import { assertSha256Hex, sha256File } from '../../shared/hash.js';
import type { Logger } from '../../shared/logger.js';
import { binaryName } from '../../shared/store-layout.js';
import { binaryMismatch, quarantine } from './verify.js';

// Uploads (PUT /admin/binaries). The bytes never cross a message: the store-keeper hands the
// HTTP front-end a new temporary in the binaries directory, the front-end streams the body into
// it (hashing on the way, pausing the socket while the disk lags), syncs it and hands it back
// with the hash it computed. The store-keeper then owns it again: it reads it back, and only
// bytes that are on disk and fit the hash get the name `{hash}.bin`.
//
//   http ──begin──▶ store-keeper: open .tmp-…, remember it ─▶ { id, path }
//   http ──write, hash, fsync──▶ .tmp-…
//   http ──adopt(id, {hash,size})──▶ read back ─▶ link {hash}.bin ─▶ fsync dir ─▶ index
//   http ──abandon(id)──▶ unlink .tmp-…      (client gone, hash mismatch, too large, disk full)
//
// A front-end that dies mid-upload never says abandon: a temporary nobody wrote to for
// STALE_UPLOAD_MS is removed by a timer here, and a restart of the store removes them all.

/** An upload with no write for this long was left by a front-end that went away. */
export const STALE_UPLOAD_MS = 10 * 60_000;
const SWEEP_MS = 60_000;

interface OpenUpload {
  readonly path: string;
  readonly startedAtMs: number;
}

export class Uploads {
  private readonly open = new Map<string, OpenUpload>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly dir: string, private readonly log: Logger) {
    this.timer = setInterval(() => {
      this.removeStale().catch((err) => log.warn({ err }, 'could not remove stale uploads'));
    }, SWEEP_MS).unref();
  }

  get count(): number {
    return this.open.size;
  }

  /** A new, empty temporary the caller may write to; it is not a store file until adopted. */
  async begin(): Promise<UploadSlot> {
    const { path, handle } = await openTemp(this.dir);
    await handle.close();
    const id = basename(path);
    this.open.set(id, { path, startedAtMs: Date.now() });
    return { id, path };
  }

  /**
   * Takes the finished temporary back: its bytes are read from disk and must hash to what the
   * front-end computed while they arrived, else it is removed (STORE_CORRUPT: the disk did not
   * keep what was written). `has` says whether the store already holds the hash.
   */
  async adopt(id: string, claimed: BinaryInfo, has: (hash: string) => boolean): Promise<BinaryInfo & { created: boolean }> {
    assertSha256Hex(claimed.hash, 'hash');
    const upload = this.take(id);
    try {
      if (has(claimed.hash)) return { ...claimed, created: false };
      // The writer synced before it handed the file back; a second sync is cheap and makes the
      // rename's durability this actor's own doing rather than something it was told.
      const handle = await open(upload.path, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      const written = await sha256File(upload.path);
      if (written.hash !== claimed.hash || written.size !== claimed.size) {
        throw new UpdaterError('STORE_CORRUPT', `an upload reads back as ${written.size} bytes hashing to ${written.hash}, not the ${claimed.size} bytes hashing to ${claimed.hash} that were received`);
      }
      const finalPath = join(this.dir, binaryName(claimed.hash));
      let created = await publishNoOverwrite(upload.path, finalPath, { keepTemp: true });
      if (!created) {
        // The name is taken but the index did not hold it: a leftover of a crash or another
        // hand (or, in a cluster, another replica's upload of the same bytes). Trusted only
        // once its bytes fit the name.
        const mismatch = await binaryMismatch(finalPath, claimed.hash);
        if (mismatch) {
          await quarantine(dirname(this.dir), this.dir, binaryName(claimed.hash), mismatch, this.log);
          created = await publishNoOverwrite(upload.path, finalPath, { keepTemp: true });
        }
      }
      return { ...claimed, created };
    } finally {
      await rm(upload.path, { force: true });
    }
  }

  /** Removes the temporary of an upload that will not be adopted. */
  async abandon(id: string, end: UploadEnd): Promise<void> {
    const upload = this.open.get(id);
    if (!upload) return;
    this.open.delete(id);
    await rm(upload.path, { force: true });
    this.log.info({ upload: id, end, ms: Date.now() - upload.startedAtMs }, 'upload abandoned; its temporary is removed');
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const id of [...this.open.keys()]) await this.abandon(id, 'aborted');
  }

  private take(id: string): OpenUpload {
    const upload = this.open.get(id);
    if (!upload) throw new UpdaterError('ACTOR_UNAVAILABLE', 'the store-keeper no longer knows this upload (it restarted, or the upload stalled for 10 minutes); send it again');
    this.open.delete(id);
    return upload;
  }

  private async removeStale(): Promise<void> {
    const now = Date.now();
    for (const [id, upload] of [...this.open]) {
      const modified = await stat(upload.path).then((s) => s.mtimeMs, () => 0);
      if (now - modified < STALE_UPLOAD_MS) continue;
      this.log.warn({ upload: id }, 'an upload had no write for 10 minutes; its front-end went away');
      await this.abandon(id, 'aborted');
    }
  }
}

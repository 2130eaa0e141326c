import type { StoreKeeperApi, UploadEnd, UploadSlot } from '../../../messages/store.js';
import { storeWriteError } from '../../../shared/durable-file.js';
import { UpdaterError } from '../../../shared/errors.js';
import { assertSha256Hex } from '../../../shared/hash.js';
import type { Peer } from '../../../shared/rpc.js';
import type { ActorContext } from '../../runtime.js';
import { STREAMED_BODY, type AdminRoute, type UploadHeaders } from './route-types.js';
import { sendError, sendJson, type Exchange } from '../server/respond.js';
import { UploadSink } from './upload-sink.js';

// PUT /admin/binaries (docs/operations.md, "Uploads"): the raw body streams into the store.
// The store-keeper hands out the temporary and names it once it is complete (its uploads.ts);
// this side reads the socket, hashes, writes with backpressure (upload-sink.ts) and answers.
//
//   client ─body─▶ onData ─▶ UploadSink ─▶ .tmp-… in store/binaries ─▶ adoptUpload ─▶ {hash}.bin
//                   │ too large, client gone, write failed, hash mismatch
//                   └──────────────▶ abandonUpload: the temporary goes, nothing is named
//
// An answer given before the body is read whole (413, 507, 400) closes the connection: the
// rest of a multi-gigabyte body is not worth reading to keep it open.

type Ending = { kind: 'last' } | { kind: 'aborted' } | { kind: 'too-large' } | { kind: 'write-failed'; err: unknown };

export function registerUploadRoutes(route: AdminRoute, ctx: ActorContext): void {
  const max = ctx.config.admin.maxUploadBytes;
  const store = <R>(fn: (s: Peer<StoreKeeperApi>) => Promise<R>) => ctx.call('store-keeper', fn);
  route('put', '/admin/binaries', 'admin_upload', async (ex, _body, query) => {
    const outcome = await receiveUpload(ex, query.upload!, max, store, query.audited);
    if (outcome) ctx.log.info({ hash: outcome.hash, size: outcome.size, created: outcome.created }, 'admin: binary uploaded');
  }, STREAMED_BODY);
}

const tooLarge = (max: number) => new UpdaterError('BODY_TOO_LARGE', `an upload must be at most ${max} bytes (admin.max_upload_mb)`);

/**
 * Must be called synchronously in the uWS handler (onData is registered before the first
 * await). Resolves with what was stored, or undefined when an answer was already given.
 */
async function receiveUpload(ex: Exchange, headers: UploadHeaders, max: number,
  store: <R>(fn: (s: Peer<StoreKeeperApi>) => Promise<R>) => Promise<R>, audited: Promise<unknown>): Promise<{ hash: string; size: number; created: boolean } | undefined> {
  const declared = headers.contentLength;
  if (declared !== '' && (!/^\d+$/.test(declared) || Number(declared) > max)) {
    return refuse(ex, tooLarge(max));
  }
  const expected = headers.contentSha256 === '' ? undefined : assertSha256Hex(headers.contentSha256, 'X-Content-SHA256');

  // Chunks that arrive before the temporary is open wait here; the socket is paused meanwhile.
  const early: Buffer[] = [];
  let sink: UploadSink | undefined;
  let received = 0;
  let ending: Ending | undefined;
  let signal: (() => void) | undefined;
  const end = (e: Ending) => {
    if (ending) return;
    ending = e;
    signal?.();
  };
  const ended = new Promise<void>((resolve) => (signal = resolve));
  const flow = {
    pause: () => {
      if (!ex.aborted) ex.res.pause();
    },
    resume: () => {
      if (!ex.aborted) ex.res.resume();
    },
  };
  ex.wake = () => end({ kind: 'aborted' });
  ex.res.onData((chunk, isLast) => {
    if (ending) return;
    received += chunk.byteLength;
    if (received > max) return end({ kind: 'too-large' });
    if (sink) sink.push(new Uint8Array(chunk));
    else early.push(Buffer.from(chunk.slice(0)));
    if (isLast) end({ kind: 'last' });
  });
  flow.pause();

  let slot: UploadSlot;
  try {
    // The change is in the audit log before a byte of it is stored (audit.ts).
    await audited;
    slot = await store((s) => s.beginUpload());
  } catch (err) {
    return refuse(ex, err);
  }
  const abandon = (why: UploadEnd) => store((s) => s.abandonUpload(slot.id, why)).catch(() => undefined);
  try {
    sink = await UploadSink.open(slot.path, flow, (err) => end({ kind: 'write-failed', err }));
  } catch (err) {
    await abandon('failed');
    throw storeWriteError(err, 'an upload');
  }
  for (const chunk of early.splice(0)) sink.push(chunk);
  flow.resume();
  await ended;
  const how = ending!;
  if (how.kind !== 'last') {
    await sink.cancel();
    if (how.kind === 'aborted') {
      await abandon('aborted');
      return undefined;
    }
    const err = how.kind === 'too-large' ? tooLarge(max) : storeWriteError(how.err, 'an upload');
    await abandon(isFull(err) ? 'store-full' : how.kind === 'too-large' ? 'too-large' : 'failed');
    return refuse(ex, err);
  }
  let got: { hash: string; size: number };
  try {
    got = await sink.finish();
  } catch (err) {
    const mapped = storeWriteError(err, 'an upload');
    await abandon(isFull(mapped) ? 'store-full' : 'failed');
    throw mapped;
  }
  if (expected !== undefined && got.hash !== expected) {
    await abandon('hash-mismatch');
    throw new UpdaterError('HASH_MISMATCH', `the ${got.size} bytes received hash to ${got.hash}, not to the X-Content-SHA256 ${expected}; nothing was stored`);
  }
  const stored = await store((s) => s.adoptUpload(slot.id, got));
  sendJson(ex, stored.created ? 201 : 200, { hash: stored.hash, size: stored.size });
  return stored;
}

function isFull(err: unknown): boolean {
  return err instanceof UpdaterError && err.code === 'STORE_FULL';
}

/** Answers before the body is read whole, and closes the connection after the answer. */
function refuse(ex: Exchange, err: unknown): undefined {
  sendError(ex, err, { Connection: 'close' });
  return undefined;
}

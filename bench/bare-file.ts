import { open } from 'node:fs/promises';
import { workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';
import { listenInWorker } from './bare-worker.js';

// The baseline of the download benchmark: uWebSockets.js serving one file with the pattern its
// own examples use, in a worker thread as the server's front-end is.
//
//   GET /hot   the file from memory: the whole remainder is offered to tryEnd, and onWritable
//              continues from the offset uWS reports
//   GET /disk  the file from disk: 64 KiB reads, each offered to tryEnd, the next read only once
//              the socket took the chunk

export interface BareFileData {
  readonly path: string;
}

const CHUNK_BYTES = 64 * 1024;
const { path } = workerData as BareFileData;
const file = await open(path, 'r');
const bytes = await file.readFile();
const total = bytes.length;
const app = uWS.App();

function headers(res: uWS.HttpResponse): void {
  res.writeStatus('200 OK');
  res.writeHeader('Content-Type', 'application/zstd');
}

app.get('/hot', (res) => {
  let aborted = false;
  res.onAborted(() => (aborted = true));
  const send = (from: number): boolean => {
    let ok = false;
    res.cork(() => {
      if (from === 0) headers(res);
      [ok] = res.tryEnd(bytes.subarray(from), total);
    });
    return ok;
  };
  if (send(0)) return;
  res.onWritable((offset) => (aborted ? true : send(offset)));
});

app.get('/disk', (res) => {
  let aborted = false;
  let wake: (() => void) | undefined;
  res.onAborted(() => {
    aborted = true;
    wake?.();
  });
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  void (async () => {
    let sent = 0;
    res.cork(() => headers(res));
    while (sent < total && !aborted) {
      const { bytesRead } = await file.read(buffer, 0, Math.min(CHUNK_BYTES, total - sent), sent);
      if (aborted) return;
      const chunk = buffer.subarray(0, bytesRead);
      const base = res.getWriteOffset();
      let ok = false;
      let done = false;
      res.cork(() => ([ok, done] = res.tryEnd(chunk, total)));
      if (!ok && !done) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          res.onWritable((offset) => {
            if (aborted) {
              resolve();
              return true;
            }
            let retry = false;
            res.cork(() => ([retry, done] = res.tryEnd(chunk.subarray(offset - base), total)));
            if (retry || done) resolve();
            return retry;
          });
        });
      }
      sent += bytesRead;
    }
  })();
});

listenInWorker(app, 'the bare file server', () => file.close());

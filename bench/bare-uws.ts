import { workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';
import { validateHeartbeat } from '../src/shared/wire/validate.js';
import { listenInWorker } from './bare-worker.js';

// The baseline for the heartbeat benchmark: a uWebSockets.js handler that reads the POST body
// and answers fixed bytes, with no parsing, validation or actor hop. It runs in a worker thread,
// as the server's HTTP front-end does, so both pay the same thread costs.
//
// Each path also has a `/codec` twin that does the front-end's own per-request work (copy the
// body, JSON.parse, validate, JSON.stringify the manifest) but no actor hop: the gap between
// it and the real server is the cost of the hop to the manifester and back.

export interface BareWorkerData {
  /** Path → the exact bytes (and content type) the real server answered on that request. */
  readonly answers: Record<string, { body: string; contentType: string }>;
}

const { answers } = workerData as BareWorkerData;
const app = uWS.App();
for (const [path, answer] of Object.entries(answers)) {
  const body = Buffer.from(answer.body);
  app.post(path, (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onData((_chunk, isLast) => {
      if (!isLast || aborted) return;
      res.cork(() => {
        res.writeStatus('200 OK');
        res.writeHeader('Content-Type', answer.contentType);
        res.end(body);
      });
    });
  });
  const manifest: unknown = JSON.parse(answer.body);
  app.post(`${path}/codec`, (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(new Uint8Array(chunk).slice()));
      if (!isLast || aborted) return;
      validateHeartbeat(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      const text = JSON.stringify(manifest);
      res.cork(() => {
        res.writeStatus('200 OK');
        res.writeHeader('Content-Type', answer.contentType);
        res.end(text);
      });
    });
  });
}

listenInWorker(app, 'the bare handler');

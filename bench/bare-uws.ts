import { workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';
import { listenInWorker } from './bare-worker.js';

// The baseline for the heartbeat benchmark: a uWebSockets.js handler that reads the POST body
// and answers fixed bytes, with no parsing, validation or actor hop. It runs in a worker thread,
// as the server's HTTP front-end does, so both pay the same thread costs.

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
}

listenInWorker(app, 'the bare handler');

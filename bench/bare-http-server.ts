import { readFileSync, writeFileSync } from 'node:fs';
import type { BareWorkerData } from './bare-uws.js';
import { startBareWorker, stopBareWorker } from './bare-worker.js';

// The bare uWebSockets.js handler (bare-uws.ts, a worker thread as the server's HTTP
// front-end is) in a process of its own, so its CPU is read from /proc like the server's and
// the load generator's process stays on the load cores.
//   node dist/bench/bare-http-server.js ANSWERS_JSON_FILE PORT_FILE
// ANSWERS_JSON_FILE holds BareWorkerData; the port is written to PORT_FILE, then "listening".

const [answersFile, portFile] = process.argv.slice(2);
if (!answersFile || !portFile) throw new Error('usage: bare-http-server.js ANSWERS_JSON_FILE PORT_FILE');
const data = JSON.parse(readFileSync(answersFile, 'utf8')) as BareWorkerData;
const { worker, port } = await startBareWorker(new URL('./bare-uws.js', import.meta.url), data);
writeFileSync(portFile, String(port));
process.stdout.write('listening\n');
process.once('SIGTERM', () => {
  void stopBareWorker(worker).finally(() => process.exit(0));
});

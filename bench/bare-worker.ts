import { parentPort, Worker } from 'node:worker_threads';
import uWS from 'uWebSockets.js';

// The baselines (bare-uws.ts, bare-file.ts) run in a worker thread, as the server's HTTP
// front-end does. Each posts its port once it listens and closes its sockets on any message.

export async function startBareWorker(script: URL, workerData: unknown): Promise<{ worker: Worker; port: number }> {
  const worker = new Worker(script, { workerData });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', (m: { port: number }) => resolve(m.port));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`${script.pathname} exited with ${code} before listening`)));
  });
  return { worker, port };
}

export async function stopBareWorker(worker: Worker): Promise<void> {
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  worker.postMessage('close');
  const timer = setTimeout(() => void worker.terminate(), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Inside the worker: listens on a free loopback port, posts it, and closes everything on any message. */
export function listenInWorker(app: uWS.TemplatedApp, what: string, cleanup: () => Promise<void> = async () => undefined): void {
  app.listen('127.0.0.1', 0, (socket) => {
    if (!socket) throw new Error(`${what} cannot listen on 127.0.0.1`);
    parentPort!.postMessage({ port: uWS.us_socket_local_port(socket) });
    parentPort!.once('message', () => {
      // Native sockets must be closed before the worker's loop ends, or the process aborts.
      uWS.us_listen_socket_close(socket);
      (app as unknown as { close(): void }).close();
      void cleanup().finally(() => parentPort!.close());
    });
  });
}

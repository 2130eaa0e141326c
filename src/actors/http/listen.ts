import uWS from 'uWebSockets.js';
import { UpdaterError } from '../../shared/errors.js';

/**
 * Listens on host:port alone. uWS sets SO_REUSEPORT by default, so a second server on a taken
 * port would "listen" too and the kernel would split connections between two servers with
 * different tracks; LIBUS_LISTEN_EXCLUSIVE_PORT makes the bind fail instead, and start-up with it.
 */
export function listenExclusive(app: uWS.TemplatedApp, host: string, port: number): Promise<uWS.us_listen_socket> {
  // The (host, port, options, callback) form exists natively but not in the bundled typings.
  const listen = app.listen as unknown as (host: string, port: number, options: number, cb: (socket: uWS.us_listen_socket | false) => void) => void;
  const { LIBUS_LISTEN_EXCLUSIVE_PORT } = uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number };
  return new Promise((resolve, reject) => {
    listen.call(app, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, (socket) => (socket
      ? resolve(socket)
      : reject(new UpdaterError('INTERNAL', `cannot listen on ${host}:${port}: the port is in use or not permitted`))));
  });
}

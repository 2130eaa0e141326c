import uWS from 'uWebSockets.js';
import type { Config } from '../../../shared/config/types.js';
import { UpdaterError } from '../../../shared/errors.js';
import { guardFraming } from './framing.js';

// The HTTP actor's listeners: plain HTTP and HTTPS for devices, and an admin listener of its
// own when `listen.admin` is set (the admin API then never answers on a device listener).
//
//   listen.http  ─▶ App     ─▶ device routes (+ admin routes unless listen.admin)
//   listen.https ─▶ SSLApp  ─▶ device routes (+ admin routes unless listen.admin)
//   listen.admin ─▶ App     ─▶ admin routes only
//
// With tls.client_ca_file, listen.https is Node's TLS server instead (client-certificates.ts),
// forwarding to an App on 127.0.0.1 (an ephemeral port) that serves what the SSLApp would.
//
// Every route of every listener passes through the framing guard (framing.ts) first.

export type ListenerName = 'http' | 'https' | 'admin';

export interface Listener {
  readonly name: ListenerName;
  readonly app: uWS.TemplatedApp;
  readonly host: string;
  readonly port: number;
  readonly servesDevices: boolean;
  readonly servesAdmin: boolean;
  /** The loopback listener behind the client-certificate front: the only one whose requests may carry a certified device. */
  readonly certified: boolean;
}

/** uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT: no SO_REUSEPORT, so a taken port fails the start. */
const EXCLUSIVE_PORT = 1;

export function planListeners(config: Config): Listener[] {
  const separateAdmin = config.listen.admin !== undefined;
  const listeners: Listener[] = [
    { name: 'http', app: guardFraming(uWS.App()), ...config.listen.http, servesDevices: true, servesAdmin: !separateAdmin, certified: false },
  ];
  if (config.listen.https) {
    const tls = config.tls!; // the configuration refuses listen.https without tls
    if (tls.clientCaFile === undefined) {
      const app = guardFraming(uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile }));
      listeners.push({ name: 'https', app, ...config.listen.https, servesDevices: true, servesAdmin: !separateAdmin, certified: false });
    } else {
      listeners.push({ name: 'https', app: guardFraming(uWS.App()), host: '127.0.0.1', port: 0, servesDevices: true, servesAdmin: !separateAdmin, certified: true });
    }
  }
  if (config.listen.admin) {
    listeners.push({ name: 'admin', app: guardFraming(uWS.App()), ...config.listen.admin, servesDevices: false, servesAdmin: true, certified: false });
  }
  return listeners;
}

/** Binds one listener exclusively; rejects (and the server does not start) when it cannot. */
export function listenExclusive(listener: Listener): Promise<uWS.us_listen_socket> {
  const { app, host, port, name } = listener;
  return new Promise((resolve, reject) => {
    // The typings lack the (host, port, options, cb) form that the native module accepts.
    const listen = app.listen as unknown as (h: string, p: number, o: number, cb: (s: uWS.us_listen_socket | false) => void) => void;
    listen.call(app, host, port, EXCLUSIVE_PORT, (socket) =>
      socket ? resolve(socket) : reject(new UpdaterError('INTERNAL', `cannot listen on ${host}:${port} for listen.${name} (in use or not permitted)`)));
  });
}

import { createSecureContext } from 'node:tls';
import { ConfigError, hostPort, isMap, readTextFile, refuseUnknown, section, str, type Node } from './fields.js';
import type { Config, HostPort } from './types.js';

// The listeners (`listen.*`) and the HTTPS certificate (`tls.*`). Everything that would only
// fail once the server listens (an unreadable key, a certificate that does not match its key,
// two listeners on one port) is refused here, before anything starts.

const LISTEN_KEYS = ['http', 'https', 'admin', 'coap'] as const;
const TLS_KEYS = ['cert_file', 'key_file'] as const;

export function readListen(doc: Node, pathOf: (p: string) => string): Pick<Config, 'listen' | 'tls'> {
  const listen = section(doc, 'listen', 'listen', LISTEN_KEYS);
  const optional = (key: 'https' | 'admin' | 'coap') => (listen[key] !== undefined ? { [key]: hostPort(listen[key], `listen.${key}`) } : {});
  const listeners: Config['listen'] = {
    http: hostPort(listen.http ?? '127.0.0.1:8080', 'listen.http'),
    ...optional('https'),
    ...optional('admin'),
    ...optional('coap'),
  };
  refuseSharedTcpPorts(listeners);
  const tls = readTls(doc, pathOf, listeners.https !== undefined);
  return { listen: listeners, ...(tls ? { tls } : {}) };
}

/** HTTP, HTTPS and admin are TCP listeners of one process: two on one port cannot both bind. */
function refuseSharedTcpPorts(listen: Config['listen']): void {
  const tcp = (['http', 'https', 'admin'] as const)
    .map((name) => [name, listen[name]] as const)
    .filter((entry): entry is readonly [typeof entry[0], HostPort] => entry[1] !== undefined && entry[1].port !== 0);
  for (let i = 0; i < tcp.length; i++) {
    for (let j = i + 1; j < tcp.length; j++) {
      const [a, first] = tcp[i]!;
      const [b, second] = tcp[j]!;
      if (first.port === second.port) throw new ConfigError(`listen.${b}`, `uses port ${second.port}, as listen.${a} does; each listener needs its own port`);
    }
  }
}

function readTls(doc: Node, pathOf: (p: string) => string, httpsWanted: boolean): Config['tls'] {
  if (doc.tls === undefined || doc.tls === null) {
    if (httpsWanted) throw new ConfigError('tls', 'is required when listen.https is set (tls.cert_file and tls.key_file)');
    return undefined;
  }
  if (!isMap(doc.tls)) throw new ConfigError('tls', 'must be a map with cert_file and key_file');
  refuseUnknown(doc.tls, 'tls', TLS_KEYS);
  if (!httpsWanted) throw new ConfigError('tls', 'is set but listen.https is not; add listen.https or remove tls');
  const files = {} as { cert_file: string; key_file: string };
  const pem = {} as { cert_file: string; key_file: string };
  for (const key of TLS_KEYS) {
    const text = str(doc.tls, key, 'tls');
    if (!text) throw new ConfigError(`tls.${key}`, 'is required (a PEM file)');
    files[key] = pathOf(text);
    pem[key] = readTextFile(files[key], `tls.${key}`);
  }
  try {
    // OpenSSL checks that both parse and that the key belongs to the certificate.
    createSecureContext({ cert: pem.cert_file, key: pem.key_file });
  } catch (err) {
    throw new ConfigError('tls', `the certificate and key cannot be used together: ${(err as Error).message}`);
  }
  return { certFile: files.cert_file, keyFile: files.key_file };
}

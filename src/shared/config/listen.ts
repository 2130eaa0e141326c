import { createSecureContext } from 'node:tls';
import { ConfigError, readTextFile } from './document.js';
import type { ConfigDocument } from './schema.js';

// Checks of the listeners (`listen.*`) and the HTTPS certificate (`tls.*`) that span keys or
// read files. Everything that would only fail once the server listens (an unreadable key, a
// certificate that does not match its key, two listeners on one port) is refused here, before
// anything starts.

type HostPort = { readonly host: string; readonly port: number };

export function checkListeners(doc: Pick<ConfigDocument, 'listen' | 'tls'>): void {
  refuseSharedTcpPorts(doc.listen);
  checkTls(doc.tls, doc.listen.https !== undefined);
}

/** HTTP, HTTPS and admin are TCP listeners of one process: two on one port cannot both bind. */
function refuseSharedTcpPorts(listen: ConfigDocument['listen']): void {
  const tcp = (['http', 'https', 'admin'] as const)
    .map((name) => [name, listen[name]] as const)
    .filter((entry): entry is readonly [(typeof entry)[0], HostPort] => entry[1] !== undefined && entry[1].port !== 0);
  for (let i = 0; i < tcp.length; i++) {
    for (let j = i + 1; j < tcp.length; j++) {
      const [a, first] = tcp[i]!;
      const [b, second] = tcp[j]!;
      if (first.port === second.port) throw new ConfigError(`listen.${b}`, `uses port ${second.port}, as listen.${a} does; each listener needs its own port`);
    }
  }
}

function checkTls(tls: ConfigDocument['tls'], httpsWanted: boolean): void {
  if (tls === undefined) {
    if (httpsWanted) throw new ConfigError('tls', 'is required when listen.https is set (tls.cert_file and tls.key_file)');
    return;
  }
  if (!httpsWanted) throw new ConfigError('tls', 'is set but listen.https is not; add listen.https or remove tls');
  const cert = readTextFile(tls.certFile, 'tls.cert_file');
  const key = readTextFile(tls.keyFile, 'tls.key_file');
  try {
    // OpenSSL checks that both parse and that the key belongs to the certificate.
    createSecureContext({ cert, key });
  } catch (err) {
    throw new ConfigError('tls', `the certificate and key cannot be used together: ${(err as Error).message}`);
  }
}

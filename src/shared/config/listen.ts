import { X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { ConfigError, readTextFile } from './document.js';
import type { ConfigDocument } from './schema.js';

// Checks of the listeners (`listen.*`) and the HTTPS certificate (`tls.*`) that span keys or
// read files. Everything that would only fail once the server listens (an unreadable key, a
// certificate that does not match its key, two listeners on one port) is refused here, before
// anything starts.

type HostPort = { readonly host: string; readonly port: number };

export function checkListeners(doc: Pick<ConfigDocument, 'listen' | 'tls' | 'devices' | 'metrics'>): void {
  refuseSharedTcpPorts(doc.listen);
  if (doc.metrics.listener === 'admin' && doc.listen.admin === undefined) {
    throw new ConfigError('metrics.listener', 'admin needs listen.admin: /metrics would be served nowhere');
  }
  checkTls(doc.tls, doc.listen.https !== undefined);
  if (doc.tls?.clientCaFile !== undefined) checkClientCa(doc.tls.clientCaFile, doc.devices.auth === 'on');
}

/** The device CA: readable, every PEM block a CA certificate, and only where a certificate replaces a token. */
function checkClientCa(file: string, authOn: boolean): void {
  if (!authOn) throw new ConfigError('tls.client_ca_file', 'needs devices.auth: on (a client certificate stands in for a device token, and with auth off no token is asked for)');
  const pem = readTextFile(file, 'tls.client_ca_file');
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new ConfigError('tls.client_ca_file', 'holds no PEM certificate');
  for (const [i, block] of blocks.entries()) {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(block);
    } catch (err) {
      throw new ConfigError('tls.client_ca_file', `certificate ${i + 1} cannot be read: ${(err as Error).message}`);
    }
    if (!cert.ca) throw new ConfigError('tls.client_ca_file', `certificate ${i + 1} (${cert.subject.replace(/\n/g, ', ')}) is not a CA certificate (basicConstraints CA:TRUE)`);
  }
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

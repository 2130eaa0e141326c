import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';

// A private CA and a server certificate for 127.0.0.1 and localhost, made with the openssl
// command line as an operator would (no library of ours involved in making them).

const run = promisify(execFile);

/**
 * A random serial for each certificate. `-CAcreateserial` keeps the CA's next serial in a shared
 * `.srl` file that concurrent signings read and write at once: under load one of them read it half
 * written ("Unable to load number from …srl") and the test failed by chance.
 */
const serial = () => ['-set_serial', `0x1${randomBytes(15).toString('hex')}`];

export interface TestPki {
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  /** A second CA that signed nothing the server uses: trusting only it must fail. */
  readonly otherCaCert: string;
  readonly caKey: string;
  readonly otherCaKey: string;
  readonly dir: string;
}

export interface ClientCertificate {
  readonly cert: string;
  readonly key: string;
}

/**
 * A device's client certificate with subject CN `cn`, signed by the test CA (or by the unrelated
 * one), for TLS client authentication only, as docs/operations.md tells a maker to issue it.
 */
export async function makeClientCertificate(pki: TestPki, cn: string, signer: 'ca' | 'other' = 'ca'): Promise<ClientCertificate> {
  const base = join(pki.dir, `client-${signer}-${cn.replace(/[^A-Za-z0-9-]/g, '_')}`);
  const [key, csr, cert, ext] = [`${base}.key`, `${base}.csr`, `${base}.pem`, `${base}.ext`];
  await writeFile(ext, 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n');
  await run('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${cn}`]);
  const [caCert, caKey] = signer === 'ca' ? [pki.caCert, pki.caKey] : [pki.otherCaCert, pki.otherCaKey];
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', caCert, '-CAkey', caKey, ...serial(), '-out', cert, '-days', '2', '-extfile', ext]);
  return { cert, key };
}

async function selfSignedCa(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}.key`);
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  return { cert, key };
}

export async function makeTestPki(parent: string): Promise<TestPki> {
  const dir = join(parent, 'pki');
  await mkdir(dir, { recursive: true });
  const ca = await selfSignedCa(dir, 'updater-test-ca');
  const other = await selfSignedCa(dir, 'unrelated-ca');
  const serverKey = join(dir, 'server.key');
  const csr = join(dir, 'server.csr');
  const serverCert = join(dir, 'server.pem');
  const ext = join(dir, 'server.ext');
  await writeFile(ext, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  await run('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', serverKey, '-out', csr, '-subj', '/CN=localhost']);
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, ...serial(),
    '-out', serverCert, '-days', '2', '-extfile', ext]);
  return { caCert: ca.cert, serverCert, serverKey, otherCaCert: other.cert, caKey: ca.key, otherCaKey: other.key, dir };
}

export interface TlsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * One HTTPS request trusting the test CA, with a client certificate when given. Rejects when
 * the connection fails or is cut before an answer (a refused client certificate).
 */
export async function httpsRequest(url: string, options: { method?: string; headers?: Record<string, string>; body?: string | Buffer; client?: ClientCertificate; pki: TestPki }): Promise<TlsAnswer> {
  const [ca, cert, key] = await Promise.all([
    readFile(options.pki.caCert),
    options.client ? readFile(options.client.cert) : undefined,
    options.client ? readFile(options.client.key) : undefined,
  ]);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, ca, cert, key, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

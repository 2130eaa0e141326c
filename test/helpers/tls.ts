import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

// A private CA and a server certificate for 127.0.0.1 and localhost, made with the openssl
// command line as an operator would (no library of ours involved in making them).

const run = promisify(execFile);

export interface TestPki {
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  /** A second CA that signed nothing the server uses: trusting only it must fail. */
  readonly otherCaCert: string;
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
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial',
    '-out', serverCert, '-days', '2', '-extfile', ext]);
  return { caCert: ca.cert, serverCert, serverKey, otherCaCert: other.cert };
}

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { validateAgentConfig } from '../../../agent/config.js';
import { validateConfig } from '../../../src/shared/config/load.js';
import { makeFixture } from '../../helpers/fixture.js';
import { configDocument } from '../../helpers/server.js';
import { makeTestPki } from '../../helpers/tls.js';
import { needs } from '../../helpers/system-tools.js';

t.test('listen.https, listen.admin and tls: what is refused before anything listens', needs('openssl'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const pki = await makeTestPki(fixture.dir);
  const tls = { cert_file: pki.serverCert, key_file: pki.serverKey };
  const load = (overrides: Record<string, unknown>) => validateConfig(configDocument(fixture, 8080, [], overrides), join(fixture.dir, 'updater.yaml'));

  const plain = load({});
  t.equal(plain.listen.https, undefined, 'no HTTPS unless listen.https is set');
  t.equal(plain.listen.admin, undefined, 'admin on the device listeners unless listen.admin is set');
  t.equal(plain.tls, undefined);

  const full = load({ listen: { https: '0.0.0.0:8443', admin: '127.0.0.1:8081' }, tls });
  t.same(full.listen.https, { host: '0.0.0.0', port: 8443 });
  t.same(full.listen.admin, { host: '127.0.0.1', port: 8081 });
  t.same(full.tls, { certFile: pki.serverCert, keyFile: pki.serverKey });

  t.throws(() => load({ listen: { https: '127.0.0.1:8443' } }), /^tls is required when listen\.https is set/);
  t.throws(() => load({ tls }), /^tls is set but listen\.https is not/);
  t.throws(() => load({ listen: { https: '127.0.0.1:8443' }, tls: { cert_file: pki.serverCert } }), /^tls\.key_file is required/);
  t.throws(() => load({ listen: { https: '127.0.0.1:8443' }, tls: { ...tls, passphrase: 'x' } }), /^tls\.passphrase is not a known key/);
  t.throws(() => load({ listen: { https: '127.0.0.1:8443' }, tls: { ...tls, key_file: join(fixture.dir, 'missing.key') } }), /^tls\.key_file cannot read/);
  const otherKey = join(fixture.dir, 'pki', 'unrelated-ca.key');
  t.throws(() => load({ listen: { https: '127.0.0.1:8443' }, tls: { ...tls, key_file: otherKey } }), /^tls the certificate and key cannot be used together/,
    'a key that does not belong to the certificate');
  t.throws(() => load({ listen: { https: '127.0.0.1:8443' }, tls: { cert_file: pki.serverKey, key_file: pki.serverKey } }), /^tls the certificate and key/,
    'a key file given as the certificate');
  t.throws(() => load({ listen: { admin: '127.0.0.1:8080' } }), /^listen\.admin uses port 8080, as listen\.http does/);
  t.throws(() => load({ listen: { https: '0.0.0.0:8080' }, tls }), /^listen\.https uses port 8080, as listen\.http does/);
  t.throws(() => load({ listen: { admin: 'loopback' } }), /^listen\.admin must be host:port/);
  t.doesNotThrow(() => load({ listen: { http: '127.0.0.1:0', admin: '127.0.0.1:0' } }), 'port 0 (any free port) may repeat');

  const https = { listen: { https: '127.0.0.1:8443' } };
  const withCa = load({ ...https, tls: { ...tls, client_ca_file: pki.caCert }, devices: { auth: 'on' } });
  t.equal(withCa.tls?.clientCaFile, pki.caCert, 'tls.client_ca_file: the device CA');
  t.throws(() => load({ ...https, tls: { ...tls, client_ca_file: pki.caCert } }), /^tls\.client_ca_file needs devices\.auth: on/);
  t.throws(() => load({ ...https, tls: { ...tls, client_ca_file: join(fixture.dir, 'missing.pem') }, devices: { auth: 'on' } }), /^tls\.client_ca_file cannot read/);
  t.throws(() => load({ ...https, tls: { ...tls, client_ca_file: pki.serverKey }, devices: { auth: 'on' } }), /^tls\.client_ca_file holds no PEM certificate/);
  t.throws(() => load({ ...https, tls: { ...tls, client_ca_file: pki.serverCert }, devices: { auth: 'on' } }), /^tls\.client_ca_file certificate 1 \(CN=localhost\) is not a CA certificate/,
    'a leaf certificate given as the CA');
});

t.test('the agent\'s ca_file', needs('openssl'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const pki = await makeTestPki(fixture.dir);
  const base = { device_id: 'd1', public_key: fixture.publicKey, http_url: 'https://127.0.0.1:8443', slot_dir: fixture.dir, restart_command: 'true' };
  const load = (extra: Record<string, unknown>) => validateAgentConfig({ ...base, ...extra }, join(fixture.dir, 'agent.yaml'));
  t.match(load({ ca_file: pki.caCert }).caCertificates, /^-----BEGIN CERTIFICATE-----/, 'the PEM is read at start');
  t.equal(load({}).caCertificates, undefined, 'without ca_file: Node\'s built-in roots');
  t.match(load({ ca_file: 'pki/updater-test-ca.pem' }).caCertificates, /BEGIN CERTIFICATE/, 'relative to the configuration file');
  t.throws(() => load({ ca_file: join(fixture.dir, 'nope.pem') }), /^ca_file cannot read/);
  const garbage = join(fixture.dir, 'garbage.pem');
  await writeFile(garbage, 'not a certificate\n');
  t.throws(() => load({ ca_file: garbage }), /^ca_file .*no (usable )?PEM certificate/);
  t.throws(() => load({ ca_file: pki.caCert, http_url: 'http://127.0.0.1:8080' }), /^ca_file needs an https:\/\/ http_url/);
});

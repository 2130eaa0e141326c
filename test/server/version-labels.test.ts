import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, validateConfig } from '../../src/shared/config/load.js';
import { verifyStatement } from '../../src/shared/release/statement.js';
import { binaryName, storeLayout } from '../../src/shared/store-layout.js';
import { adminCall, trackOf } from '../helpers/admin.js';
import { ADMIN_TOKEN, firmware, makeFixture, nextVersion } from '../helpers/fixture.js';
import { heartbeat } from '../helpers/http.js';
import { configDocument, runUpdater, startTestServer, writeConfig } from '../helpers/server.js';

// A version label is one of the "\n"-joined parts of the signed release statement
// (docs/protocol.md, "Release statements"). The attacker here is whoever can publish or write
// the configuration: a label with a line break or another control character is refused
// wherever a label enters (the admin API, the configuration file, `updater push`), with a
// stable code, and nothing is published.

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const v1 = await fixture.writeBinary('v1.bin', firmware(40_000, 'label-1'));
const v2 = await fixture.writeBinary('v2.bin', nextVersion(firmware(40_000, 'label-1'), 'label-2'));
const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: v1.path }], { log_level: 'error' });
t.teardown(() => server.stop());

// A newline that would make the label read as the statement's next part, the other C0 and C1
// controls, DEL, and the Unicode line separator.
const HOSTILE = ['1.0\n1767225000', '1.0\r', '1.0\u0000', '\t1.0', '1.0\u007f', '1.0\u0085', '1.0\u009b31m', '1.0\u2028x'];
/** The label escaped for a TAP line (which a raw U+2028 would break). */
const shown = (label: string) => JSON.stringify(label).replace(/[\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

t.test('POST /admin/artifacts refuses a hostile label with 400 INVALID_FIELD; nothing is published and the server keeps serving', async (t) => {
  for (const version of HOSTILE) {
    const answer = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'app', version, binary: v2.path });
    t.equal(answer.status, 400, `${shown(version)}: 400`);
    t.equal(answer.json?.error?.code, 'INVALID_FIELD', `${shown(version)}: INVALID_FIELD`);
    t.match(answer.json?.error?.message, /^version must not contain a line break or another control character/);
    const fresh = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'fresh', version, binary: v2.path });
    t.equal(fresh.status, 400, `${shown(version)}: a new track is refused too`);
  }
  const track = await trackOf(server.url, 'app');
  t.equal(track.hash, v1.hash, 'the track still serves v1');
  t.equal(track.version, '1.0.0', 'with its label');
  t.equal(await trackOf(server.url, 'fresh'), undefined, 'no track was created');
  const answer = await heartbeat(server.url, v2.hash, 'app');
  t.equal(answer.status, 200, 'devices are still answered');
  t.equal(answer.json.target_version, '1.0.0');
  t.ok(verifyStatement(fixture.publicKey, answer.json, answer.json.release), 'with a statement that verifies');
  // Printable labels, Unicode included, still publish.
  const fine = await adminCall(server.url, 'POST', '/admin/artifacts', { name: 'fresh', version: '2.0.0 «rc» ✓', binary: v2.path });
  t.equal(fine.status, 200);
  t.equal((await trackOf(server.url, 'fresh')).version, '2.0.0 «rc» ✓');
});

t.test('a configuration file with such a label is refused at load, the error naming the key', async (t) => {
  const doc = (version: string) => configDocument(fixture, 1, [{ name: 'app', version, binary: v1.path }]);
  for (const version of HOSTILE) {
    let error: unknown;
    try {
      validateConfig(doc(version), join(fixture.dir, 'updater.yaml'));
    } catch (err) {
      error = err;
    }
    t.ok(error instanceof ConfigError, `${shown(version)}: refused`);
    t.match((error as Error | undefined)?.message, /^artifacts\[0\]\.version must not contain a line break or another control character/);
  }
  const legacy = { ...doc('1'), artifacts: undefined, target: { version: '1\n2', binary: v1.path } };
  t.throws(() => validateConfig(legacy, join(fixture.dir, 'updater.yaml')), /^target\.version must not contain a line break/);
  const run = await runUpdater(['serve', '--config', await writeConfig(fixture, doc('1.0\n1767225000'), 'hostile.yaml')]);
  t.equal(run.code, 2, '`updater serve` exits 2');
  t.match(run.stderr, /artifacts\[0\]\.version must not contain a line break or another control character \(found U\+000A at index 3\)/);
});

t.test('updater push refuses such a label before it uploads anything', async (t) => {
  const env = { UPDATER_TOKEN: ADMIN_TOKEN, UPDATER_SERVER: server.url };
  const v3 = await fixture.writeBinary('v3.bin', firmware(40_000, 'label-3'));
  const run = await runUpdater(['push', v3.path, '--track', 'pushed', '--version', '1.0\n1767225000'], 60_000, env);
  t.equal(run.code, 2, 'a usage error (2), not the server\'s refusal (1)');
  t.match(run.stderr, /--version must not contain a line break or another control character/);
  t.equal(await trackOf(server.url, 'pushed'), undefined, 'nothing was published');
  const stored = await readdir(storeLayout(join(fixture.dir, 'store')).binaries);
  t.notOk(stored.includes(binaryName(v3.hash)), 'and nothing was uploaded');
});

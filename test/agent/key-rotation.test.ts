import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { loadConfigFile } from '../../src/shared/config/load.js';
import { startServer, type Supervisor } from '../../src/supervisor/index.js';
import { makeDevice, runUntilRunning } from '../helpers/agent.js';
import { firmware, freePort, makeFixture, nextVersion } from '../helpers/fixture.js';
import { ACTOR_NODE_OPTIONS, childEnv } from '../helpers/node-options.js';
import { configDocument, REPO_ROOT, UPDATER_BIN, writeConfig } from '../helpers/server.js';

// The rotation drill of docs/operations.md, run as written there: a root key, signing key 1
// and its certificate; agents that know only the root follow to signing key 2 when the server
// restarts with it, over HTTP and over CoAP, without a change to their configuration; and
// then the old key stops (its certificate, of a lower serial, is refused).

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const keys = join(fixture.dir, 'keys');
await mkdir(keys);

/** The ```sh blocks of the drill, in order. */
async function drillBlocks(): Promise<string[]> {
  const doc = await readFile(join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
  const drill = doc.slice(doc.indexOf('### Rotation drill')).split(/\n## /)[0]!;
  return [...drill.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

async function runBlock(script: string): Promise<void> {
  const bin = join(fixture.dir, 'bin');
  await mkdir(bin, { recursive: true });
  // NODE_OPTIONS set here, not only in env: tap's hook puts its loader back into every child's.
  await writeFile(join(bin, 'updater'), `#!/bin/sh\nNODE_OPTIONS='${childEnv().NODE_OPTIONS ?? ''}' exec "${process.execPath}" "${UPDATER_BIN}" "$@"\n`);
  await chmod(join(bin, 'updater'), 0o755);
  const env = { ...childEnv(), PATH: `${bin}:${process.env.PATH}` };
  await promisify(execFile)('/bin/bash', ['-euo', 'pipefail', '-c', script], { cwd: keys, env });
}

const [setup, rotate] = await drillBlocks();
if (!setup || !rotate) throw new Error('docs/operations.md: the rotation drill lost one of its two sh blocks');
await runBlock(setup);
const root = (await readFile(join(keys, 'root.pub'), 'utf8')).trim();

const v1Bytes = firmware(200_000, 'k1');
const v2Bytes = nextVersion(v1Bytes, 'k2');
const v3Bytes = nextVersion(v2Bytes, 'k3');
const v2 = await fixture.writeBinary('v2.bin', v2Bytes);
const v3 = await fixture.writeBinary('v3.bin', v3Bytes);
const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
const port = await freePort();
const coapPort = await freePort();
let running: Supervisor | undefined;
t.teardown(() => running?.stop());

/** (Re)starts the server on the same ports with a signing key, its certificate and the binary of track `app`. */
async function serve(signing: number, binary: string, version: string): Promise<void> {
  await running?.stop();
  const doc = configDocument(fixture, port, [{ name: 'app', version, binary }], {
    listen: { http: `127.0.0.1:${port}`, coap: `127.0.0.1:${coapPort}` },
    signing: { private_key_file: join(keys, `signing-${signing}.key`), certificate_file: join(keys, `signing-${signing}.cert.json`) },
    allow_full_download: true,
  });
  running = await startServer(loadConfigFile(await writeConfig(fixture, doc)), { actorNodeOptions: ACTOR_NODE_OPTIONS });
}


const url = `http://127.0.0.1:${port}`;
const devices = {
  http: await makeDevice(fixture, url, v1Bytes, { public_key: undefined, root_public_key: root }),
  coap: await makeDevice(fixture, url, v1Bytes, { public_key: undefined, root_public_key: root, primary: 'coap', coap_url: `coap://127.0.0.1:${coapPort}` }),
};

t.test('agents that know only the root trust signing key 1 through GET /keys and update', async (t) => {
  await serve(1, v2.path, '2.0.0');
  for (const [name, device] of Object.entries(devices)) {
    await runUntilRunning(t, device, v2.hash, name);
    t.equal((await device.readState()).signingCertificate?.serial, 1, `${name}: trusts serial 1`);
  }
});

t.test('after the rotation drill and a restart, they follow to signing key 2 with their configuration untouched', async (t) => {
  const before = await Promise.all(Object.values(devices).map((d) => readFile(d.configPath, 'utf8')));
  await runBlock(rotate);
  await serve(2, v3.path, '3.0.0');
  for (const [name, device] of Object.entries(devices)) {
    await runUntilRunning(t, device, v3.hash, name);
    t.equal((await device.readState()).signingCertificate?.serial, 2, `${name}: trusts serial 2`);
  }
  t.same(await Promise.all(Object.values(devices).map((d) => readFile(d.configPath, 'utf8'))), before, 'no agent configuration changed');
});

t.test('the old key stops: a server signing with key 1 and its lower-serial certificate is refused', async (t) => {
  await serve(1, v1.path, '1.0.0');
  for (const [name, device] of Object.entries(devices)) {
    const run = await device.runOnce();
    t.not(run.code, 0, `${name}: --once exits non-zero`);
    t.ok(run.lines.some((l) => l.code === 'KEY_REFUSED' && l.reason === 'lower-serial'), `${name}: the certificate of serial 1 is refused`);
    t.ok(run.lines.some((l) => l.code === 'RELEASE_REFUSED' && /release refused \(signature\)/.test(l.err)), `${name}: the answer is refused (signature)`);
    t.equal((await device.current()).hash, v3.hash, `${name}: still on v3`);
  }
});

import t from 'tap';
import { encodeManifest } from '../../src/shared/wire/cbor.js';
import { makeDevice } from '../helpers/agent.js';
import { startCoapRelay } from '../helpers/coap-relay.js';
import { firmware, freePort, makeFixture, nextVersion } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';
import { startProxy } from '../helpers/proxy.js';
import { startTestServer } from '../helpers/server.js';

// The freeze: an attacker on the path keeps a real answer and shows it later, after newer
// releases, to hold devices back. With `signing.release_ttl: 2s` a kept answer expires within
// seconds; the agent refuses it (RELEASE_REFUSED, expired) over either transport, while the
// server's own answers, renewed in the background, keep being accepted.

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const v1Bytes = firmware(100_000, 'e1');
const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
const v2 = await fixture.writeBinary('v2.bin', nextVersion(v1Bytes, 'e2'));
const coapPort = await freePort();
const server = await startTestServer(fixture, [{ name: 'app', version: '2.0.0', binary: v2.path }, { name: 'old', version: '1.0.0', binary: v1.path }], {
  default_artifact: 'app', listen: { coap: `127.0.0.1:${coapPort}` }, signing: { private_key_file: fixture.keyPath, release_ttl: '2s' }, log_level: 'error',
});
t.teardown(() => server.stop());
const kept = await heartbeatUntilSigned(server.url, v1.hash, 'app');
/** The devices' patch formats, stated: the server makes their delta on their first heartbeat. */
const AGENT_FORMATS = ['bsdiff-lzma', 'bsdiff40'] as const;

for (const transport of ['http', 'coap'] as const) {
  t.test(`${transport}: an answer kept past its expiry is refused, and nothing changes on the device`, async (t) => {
    const proxy = await startProxy(server.url);
    t.teardown(() => proxy.close());
    const relay = await startCoapRelay(coapPort);
    t.teardown(() => relay.close());
    const device = await makeDevice(fixture, proxy.url, v1Bytes, { delta_formats: AGENT_FORMATS, ...(transport === 'coap' ? { primary: 'coap', coap_url: relay.url } : {}) });
    await new Promise((r) => setTimeout(r, Math.max(0, (kept.release!.expires_at + 1) * 1000 - Date.now())));
    proxy.rewriteManifest = () => kept;
    relay.replaceHeartbeatAnswer = () => encodeManifest(kept);
    const run = await device.runOnce();
    t.not(run.code, 0, '--once exits non-zero');
    t.ok(run.lines.some((l) => l.code === 'RELEASE_REFUSED' && /release refused \(expired\)/.test(l.err)), 'logged RELEASE_REFUSED (expired)');
    t.equal((await device.current()).hash, v1.hash, 'still on v1');
    t.equal(proxy.downloads().length + relay.paths.filter((p) => /^(delta|binary)\//.test(p)).length, 0, 'nothing was downloaded');
    t.same(await device.readState().catch(() => ({})).then((s: any) => s.releaseSequence ?? 0), 0, 'no sequence recorded');
    delete proxy.rewriteManifest;
    delete relay.replaceHeartbeatAnswer;
    // The refused heartbeat asked for the agent's formats, whose delta the server may still be
    // making: its answer until then is "retry later", which exits 0 and installs nothing.
    await heartbeatUntilSigned(server.url, v1.hash, 'app', 60_000, undefined, [...AGENT_FORMATS]);
    const fresh = await device.runOnce();
    t.equal(fresh.code, 0, 'the server\'s own, renewed answer is accepted');
    t.equal((await device.current()).hash, v2.hash, 'and installs', { output: fresh.output });
  });
}

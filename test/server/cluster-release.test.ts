import t, { type Test } from 'tap';
import { verifyStatement, type ReleaseStatement } from '../../src/shared/release/statement.js';
import { encodeManifest } from '../../src/shared/wire/cbor.js';
import { adminCall, eventually } from '../helpers/admin.js';
import { makeDevice, runUntilRunning, type Device } from '../helpers/agent.js';
import { startCluster, type Replica } from '../helpers/cluster.js';
import { CoapClient, manifestOf } from '../helpers/coap.js';
import { startCoapRelay } from '../helpers/coap-relay.js';
import { firmware, nextVersion, randomHash } from '../helpers/fixture.js';
import { heartbeat, heartbeatUntilSigned } from '../helpers/http.js';
import { startProxy } from '../helpers/proxy.js';
import { cohortIds, deviceHeartbeat } from '../helpers/rollout.js';

// Release statements in a cluster (docs/protocol.md, "Release statements"; docs/scaling.md):
// two replicas on one PostgreSQL database. A track changed on replica A is answered by
// replica B, over HTTP and CoAP, with a statement of the same sequence, signed with the same
// key; the sequence rises with each change made on A, also an abort with rollback, and a
// restart of B keeps it. An agent updating from B refuses an older answer captured from A.

// Two replica starts, one restart and four agent updates on a 2-core runner.
t.setTimeout(480_000);

/** What a replica answers a device on `hash` about track `app`, over HTTP and over CoAP. */
interface Answers {
  readonly http: { target_hash: string; artifact: string; target_version: string; release: ReleaseStatement };
  readonly coap: { target_hash: string; artifact: string; target_version: string; release: ReleaseStatement };
}

t.test('one sequence across the replicas, over both transports; it rises on A\'s changes and survives B\'s restart', async (t) => {
  const cluster = await startCluster(t, 2, [], { allow_full_download: true }, { coap: true });
  const [a, b] = cluster.replicas as [Replica, Replica];
  const { fixture } = cluster;
  const coapClients = new Map<Replica, CoapClient>();
  t.teardown(() => coapClients.forEach((c) => c.close()));
  const coapOf = (r: Replica) => coapClients.get(r) ?? coapClients.set(r, new CoapClient(r.coapPort!)).get(r)!;
  const v1Bytes = firmware(200_000, 'cr-1');
  const v2Bytes = nextVersion(v1Bytes, 'cr-2');
  const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
  const v2 = await fixture.writeBinary('v2.bin', v2Bytes);
  const v3 = await fixture.writeBinary('v3.bin', nextVersion(v2Bytes, 'cr-3'));

  const verifies = (m: Answers['http']) => verifyStatement(fixture.publicKey, m, m.release);
  async function answersOf(r: Replica, hash: string): Promise<Answers> {
    const http = (await heartbeat(r.url, hash, 'app')).json;
    // Right after a publish on A, B may not know the track yet: an error answer (no manifest to
    // decode), which the caller's check sees as "not yet" and asks again.
    const answer = await coapOf(r).heartbeat(hash, 'app');
    const coap = (answer.code === '2.05' ? manifestOf(answer) : { code: answer.code }) as unknown as Answers['coap'];
    return { http, coap };
  }
  /** B's answers once they name `target`, checked against A's: one sequence, both verify. */
  async function sameOnBoth(t: Test, hash: string, target: string, what: string): Promise<number> {
    const onB = await eventually(`${what} on B`, () => answersOf(b, hash), (x) => x.http.target_hash === target && x.coap.target_hash === target, 10_000);
    const onA = await answersOf(a, hash);
    t.equal(onA.http.target_hash, target, `${what}: A names the target`);
    t.equal(onB.http.release.sequence, onA.http.release.sequence, `${what}: B's HTTP statement has A's sequence`);
    t.equal(onB.coap.release.sequence, onA.http.release.sequence, `${what}: B's CoAP statement has A's sequence`);
    t.equal(onA.coap.release.sequence, onA.http.release.sequence, `${what}: A's CoAP statement too`);
    for (const [name, m] of [['A http', onA.http], ['A coap', onA.coap], ['B http', onB.http], ['B coap', onB.coap]] as const) {
      t.ok(verifies(m), `${what}: ${name} verifies with the signing key`);
    }
    return onA.http.release.sequence;
  }

  t.equal((await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '1.0.0', binary: v1.path })).status, 200);
  const s1 = await sameOnBoth(t, v1.hash, v1.hash, 'v1 published on A');
  // What an attacker keeps: A's full-mode answer for v1 (any unknown hash gets one).
  const capturedV1 = await heartbeatUntilSigned(a.url, randomHash(), 'app');
  t.equal(capturedV1.release!.sequence, s1);

  t.equal((await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '2.0.0', binary: v2.path })).status, 200);
  const s2 = await sameOnBoth(t, v1.hash, v2.hash, 'v2 published on A');
  t.ok(s2 > s1, `the second publish raised it (${s1} -> ${s2})`);

  await t.test('agents updating from B over HTTP and CoAP refuse the older answer captured from A', async (t) => {
    for (const transport of ['http', 'coap'] as const) {
      const proxy = await startProxy(b.url);
      t.teardown(() => proxy.close());
      const relay = await startCoapRelay(b.coapPort!);
      t.teardown(() => relay.close());
      const device: Device = await makeDevice(fixture, proxy.url, v1Bytes, transport === 'coap' ? { primary: 'coap', coap_url: relay.url } : {});
      await runUntilRunning(t, device, v2.hash, `${transport}: v1 to v2 from B`);
      t.equal((await device.readState()).releaseSequence, s2, `${transport}: the device runs v2 at A's sequence`);
      if (transport === 'coap') t.ok(relay.paths.some((p) => /^(delta|binary)\//.test(p)), 'coap: the update travelled over CoAP');

      proxy.rewriteManifest = () => capturedV1;
      relay.replaceHeartbeatAnswer = () => encodeManifest(capturedV1);
      const downloads = proxy.downloads().length + relay.paths.filter((p) => /^(delta|binary)\//.test(p)).length;
      const replayed = await device.runOnce();
      t.not(replayed.code, 0, `${transport}: --once exits non-zero`);
      t.ok(replayed.lines.some((l) => l.code === 'RELEASE_REFUSED' && /release refused \(older\)/.test(l.err)), `${transport}: refused as older`);
      t.equal((await device.current()).hash, v2.hash, `${transport}: still on v2`);
      t.equal(proxy.downloads().length + relay.paths.filter((p) => /^(delta|binary)\//.test(p)).length, downloads, `${transport}: nothing downloaded`);
    }
  });

  // A staged rollout of v3 on A: a device in the cohort is offered v3 by B, at a higher sequence.
  const published = await adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '3.0.0', binary: v3.path, rollout: { steps: [50, 100], step_interval: '1h' } });
  t.equal(published.status, 200);
  const inside = cohortIds(v3.hash, 50, true, 1, 'cluster-in')[0]!;
  const offered = await eventually('v3 offered by B to a cohort device', () => deviceHeartbeat(b.url, inside, v2.hash, 'app'), (x) => x.json?.target_hash === v3.hash, 10_000);
  const s3 = offered.json.release.sequence as number;
  t.ok(s3 > s2, `the rollout's target is numbered above v2 (${s3} > ${s2})`);
  t.ok(verifyStatement(fixture.publicKey, offered.json, offered.json.release));

  // Aborted with rollback on A: B sends that device back to v2, numbered above v3.
  t.equal((await adminCall(a.url, 'POST', '/admin/rollout', { artifact: 'app', action: 'abort', rollback: true })).status, 200);
  const back = await eventually('B names v2 again', () => deviceHeartbeat(b.url, inside, v3.hash, 'app'), (x) => x.json?.target_hash === v2.hash, 10_000);
  const s4 = back.json.release.sequence as number;
  t.ok(s4 > s3, `the abort with rollback gives B a higher sequence (${s4} > ${s3})`);
  t.ok(verifyStatement(fixture.publicKey, back.json, back.json.release));
  t.equal(await sameOnBoth(t, v3.hash, v2.hash, 'after the abort'), s4);

  // B killed and started again: it reads the sequence back, it does not number anew.
  await cluster.kill(b);
  await cluster.restart(b);
  coapClients.get(b)?.close();
  coapClients.delete(b);
  const restarted = await sameOnBoth(t, v3.hash, v2.hash, 'after B\'s restart');
  t.equal(restarted, s4, 'B\'s restart kept the sequence');
});

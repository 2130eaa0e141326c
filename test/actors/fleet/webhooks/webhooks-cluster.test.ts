import t from 'tap';
import { adminCall, eventually, trackOf } from '../../../helpers/admin.js';
import { startCluster } from '../../../helpers/cluster.js';
import { firmware, makeFixture } from '../../../helpers/fixture.js';
import { startReceiver } from '../../../helpers/webhook-receiver.js';
import { WEBHOOK_EVENT_TYPES } from '../../../../src/shared/webhooks/events.js';
import { ok, SECRET, secretFile } from './webhooks-case.js';

// Webhooks from a cluster of two replicas over PostgreSQL: whichever replica took a change,
// the receiver gets each event once, in order. A file of its own (webhooks-case.ts says why).

t.test('a cluster of two replicas sends each event once', async (t) => {
  const receiver = await startReceiver(SECRET);
  t.teardown(() => receiver.close());
  const secretDir = await makeFixture('updater-webhook-secret-');
  t.teardown(() => secretDir.cleanup());
  const cluster = await startCluster(t, 2, [], {
    webhooks: [{ url: receiver.url, secret_file: await secretFile(secretDir), events: [...WEBHOOK_EVENT_TYPES] }],
  });
  const [a, b] = cluster.replicas as [typeof cluster.replicas[0], typeof cluster.replicas[0]];
  const v1 = await cluster.fixture.writeBinary('c1.bin', firmware(32 * 1024, 'wh-c1'));
  await ok(adminCall(a.url, 'POST', '/admin/artifacts', { name: 'app', version: '1', binary: v1.path, rollout: { steps: [10, 100], step_interval: '1h' } }));
  // Each replica's table follows the database within moments (LISTEN/NOTIFY): the next
  // command goes to the other replica once it has seen the last change, and once the last
  // event arrived (an event is recorded moments after the call that caused it answers, so two
  // replicas' events at the same moment have no order to keep).
  const sees = (url: string, state: string) => eventually(`${url} sees ${state}`, () => trackOf(url, 'app'), (track) => track?.rollout?.state === state);
  const arrived = (n: number) => eventually(`${n} events`, async () => receiver.accepted.length, (len) => len >= n, 30_000);
  await arrived(2);
  await sees(b.url, 'running');
  await ok(adminCall(b.url, 'POST', '/admin/rollout', { artifact: 'app', action: 'pause' }));
  await arrived(3);
  await sees(a.url, 'paused');
  await ok(adminCall(a.url, 'POST', '/admin/rollout', { artifact: 'app', action: 'resume' }));
  await arrived(4);
  await sees(b.url, 'running');
  await ok(adminCall(b.url, 'POST', '/admin/rollout', { artifact: 'app', action: 'complete' }));
  await arrived(5);
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const types = receiver.accepted.map((e) => e.type);
  t.same(types, ['updater.track.published', 'updater.rollout.started', 'updater.rollout.paused', 'updater.rollout.resumed', 'updater.rollout.completed'],
    `each once, in order, whichever replica took the change: ${types.join(', ')}`);
  t.equal(new Set(receiver.accepted.map((e) => e.id)).size, 5, 'no id twice');
  t.same((await adminCall(b.url, 'GET', '/admin/webhooks')).json.webhooks[0].delivered, 5, 'both replicas read one outbox');
});

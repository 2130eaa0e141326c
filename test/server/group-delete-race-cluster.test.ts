import t from 'tap';
import { sql } from 'kysely';
import { TRACKS_LOCK_KEY } from '../../src/actors/manifester/cluster/track-queries.js';
import { openDatabase } from '../../src/shared/database/connect.js';
import { adminCall, trackOf, type AdminAnswer } from '../helpers/admin.js';
import { startCluster } from '../helpers/cluster.js';
import { lockWaiters, until } from '../helpers/databases.js';
import { firmware } from '../helpers/fixture.js';

// DELETE /admin/groups/{name} on one replica while a publish on another starts a rollout that
// names the group. The delete asked its own manifester whether a rollout names the group and
// the publish asked the fleet whether the group exists, each before the other acted: both
// answered 200, and the stored rollout named a group that no longer existed (its step admitted
// nobody, for ever). Whichever comes second must be refused, with the code the API gives when
// there is no race: a delete GROUP_IN_USE, a publish INVALID_ROLLOUT naming the step.
//
// The test holds the tracks' cluster-wide lock (the one every track change takes), sends one
// call, waits until it is held up (at the lock, or done), sends the other, waits the same way,
// and lets go: the first sent is the first to act.

t.setTimeout(300_000);

/** A call's answer, and whether it has come yet. */
function sent(call: Promise<AdminAnswer>): { answer: Promise<AdminAnswer>; done: () => boolean } {
  let done = false;
  const answer = call.finally(() => (done = true));
  return { answer, done: () => done };
}

t.test('a group delete and a publish naming the group, on two replicas at once: the second is refused', async (t) => {
  const cluster = await startCluster(t, 2, [], { fleet: { flush_interval: '100ms' } });
  const [a, b] = cluster.replicas as [typeof cluster.replicas[0], typeof cluster.replicas[0]];
  const v1 = await cluster.fixture.writeBinary('v1.bin', firmware(20_000, 'gdr-1'));
  const watcher = await openDatabase(cluster.relay.url);
  t.teardown(() => watcher.close());
  const db = watcher.db;
  /** Holds the tracks' lock on a connection of its own until `release` is called. */
  const holdTracks = async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const taken = new Promise<void>((resolve) => (held = resolve));
    const transaction = db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${TRACKS_LOCK_KEY})`.execute(trx);
      held();
      await released;
    });
    await taken;
    return async () => {
      release();
      await transaction;
    };
  };
  /** Sends `call` and waits until it waits at the lock (one more waiter) or has its answer. */
  const heldUp = async (waitersBefore: number, call: Promise<AdminAnswer>) => {
    const s = sent(call);
    await until(async () => s.done() || (await lockWaiters(db)) > waitersBefore);
    return s;
  };
  const publish = (url: string, artifact: string, group: string) =>
    adminCall(url, 'POST', '/admin/artifacts', { name: artifact, version: '1', binary: v1.path, rollout: { steps: [{ group }, 100], step_interval: 'manual' } });

  for (const first of ['publish', 'delete'] as const) {
    for (let round = 0; round < 2; round++) {
      const group = `g-${first}-${round}`;
      const artifact = `app-${first}-${round}`;
      t.equal((await adminCall(a.url, 'PUT', `/admin/groups/${group}`, { filter: { tags: ['canary'] } })).status, 200, `${group} made`);
      const release = await holdTracks();
      const waiting = await lockWaiters(db);
      let publishing: ReturnType<typeof sent>;
      let deleting: ReturnType<typeof sent>;
      if (first === 'publish') {
        publishing = await heldUp(waiting, publish(b.url, artifact, group));
        deleting = await heldUp(waiting + 1, adminCall(a.url, 'DELETE', `/admin/groups/${group}`));
      } else {
        deleting = await heldUp(waiting, adminCall(a.url, 'DELETE', `/admin/groups/${group}`));
        publishing = await heldUp(waiting + 1, publish(b.url, artifact, group));
      }
      await release();
      const [published, deleted] = [await publishing.answer, await deleting.answer];
      const outcome = { publish: published.status === 200 ? 200 : `${published.status} ${published.json?.error?.code}`, delete: deleted.status === 200 ? 200 : `${deleted.status} ${deleted.json?.error?.code}` };
      const exists = (await adminCall(b.url, 'GET', `/admin/groups/${group}`)).status === 200;
      const rollout = (await trackOf(b.url, artifact))?.rollout;
      if (first === 'publish') {
        t.same(outcome, { publish: 200, delete: '409 GROUP_IN_USE' }, `${group}: the publish came first, the delete is refused`);
        t.ok(exists, `${group}: the group the running rollout names is still there`);
        t.equal(rollout?.state, 'running', `${artifact}: its rollout runs`);
      } else {
        t.same(outcome, { publish: '400 INVALID_ROLLOUT', delete: 200 }, `${group}: the delete came first, the publish is refused`);
        t.notOk(exists, `${group}: the group is gone`);
        t.equal(rollout, undefined, `${artifact}: nothing was published`);
      }
      if (published.status === 400) t.match(published.json.error.message, /rollout\.steps\[0\]\.group/, 'the refusal names the step');
    }
  }
});

import { sql } from 'kysely';
import t from 'tap';
import { ClusterTracks } from '../../../../src/actors/manifester/cluster/cluster-tracks.js';
import { TrackTable, type PublishedTarget } from '../../../../src/actors/manifester/tracks.js';
import { createLogger } from '../../../../src/shared/logger.js';
import { openTestDatabase } from '../../../helpers/databases.js';

// Two "replicas" (a table and a ClusterTracks each) over one PostgreSQL database, without the
// actors: what a change writes, what the other one reads back, and what a failed change leaves.

const hash = (c: string) => c.repeat(64);
const target = (key: string, c: string): PublishedTarget => ({
  key, name: key, os: '', arch: '', version: c, hash: hash(c), size: 1, source: 'api', binary: `/srv/${c}.bin`,
});

async function replicas(t: { teardown(fn: () => Promise<void>): void }) {
  const db = await openTestDatabase(t, 'postgres', 'updater-cluster-tracks-');
  const make = () => {
    const tracks = new TrackTable();
    const changed: string[][] = [];
    const cluster = new ClusterTracks({ db, location: 'postgres://test', tracks, configDefault: '', log: createLogger('test', 'silent'), changed: (keys) => void changed.push([...keys]) });
    return { tracks, cluster, changed };
  };
  return { db, a: make(), b: make() };
}

t.test('a change on one replica is read back by the other, with the keys that changed', async (t) => {
  const { a, b } = await replicas(t);
  await a.cluster.change(() => {
    a.tracks.publish(target('app', 'a'), 3);
    a.tracks.inferDefault();
  });
  await b.cluster.refresh();
  t.equal(b.tracks.get('app')?.hash, hash('a'));
  t.equal(b.tracks.default, 'app');
  t.same(b.changed, [['app']], 'the other replica is told which track changed');

  t.equal(b.tracks.get('app')?.sequence, a.tracks.get('app')?.sequence, 'both replicas number the release alike');

  await b.cluster.change(() => void b.tracks.publish(target('app', 'b'), 3));
  await a.cluster.refresh();
  t.same(a.tracks.get('app')?.history, [hash('a')], 'history travels with the track');
  t.equal(a.tracks.get('app')?.sequence, b.tracks.get('app')?.sequence, 'the sequence of a publish on B is the one A reads back');
  t.ok(a.tracks.get('app')!.sequence > 0);
  const before = a.changed.length;
  await a.cluster.refresh();
  t.equal(a.changed.length, before, 'an unchanged revision reads nothing and tells nothing');
});

t.test('a change is applied to what the database holds, not to a stale table', async (t) => {
  const { a, b } = await replicas(t);
  await a.cluster.change(() => void a.tracks.publish(target('one', 'a'), 3));
  // B never refreshed: its change still keeps A's track.
  await b.cluster.change(() => void b.tracks.publish(target('two', 'b'), 3));
  await a.cluster.refresh();
  t.same(a.tracks.all().map((x) => x.key).sort(), ['one', 'two'], 'no lost update');
});

t.test('a change that throws writes nothing and leaves the table as the database holds it', async (t) => {
  const { a, db } = await replicas(t);
  await a.cluster.change(() => void a.tracks.publish(target('app', 'a'), 3));
  await t.rejects(a.cluster.change(() => {
    a.tracks.publish(target('app', 'b'), 3);
    throw new Error('refused half-way');
  }), /refused half-way/);
  t.equal(a.tracks.get('app')?.hash, hash('a'), 'the table went back');
  const rows = await db.selectFrom('cluster_tracks').select('doc').execute();
  t.equal(rows.length, 1);
  t.match(rows[0]!.doc, hash('a'), 'the database kept the old target');
});

t.test('a stored row that does not pass validation is STATE_CORRUPT, never served', async (t) => {
  const { a, db } = await replicas(t);
  await db.insertInto('cluster_tracks').values({ artifact: 'app', doc: JSON.stringify({ artifact: 'app', name: 'app', hash: 'nope' }) }).execute();
  await sql`insert into cluster_meta (key, value) values ('revision', '7')`.execute(db);
  await t.rejects(a.cluster.refresh(), { code: 'STATE_CORRUPT' });
  t.equal(a.tracks.all().length, 0);
});

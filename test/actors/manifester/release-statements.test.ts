import t from 'tap';
import { ReleaseStatements } from '../../../src/actors/manifester/release-statements.js';
import { TrackTable, type PublishedTarget } from '../../../src/actors/manifester/tracks.js';
import { verifyStatement } from '../../../src/shared/release/statement.js';
import { publicKeyHex } from '../../../src/shared/signing.js';

// The statement cache: signed when the table changes, renewed before half of its life by the
// timer, and looked up (never signed) by a heartbeat.

const seed = new Uint8Array(32).fill(5);
const target = (c: string): PublishedTarget => ({ key: 'app', name: 'app', os: '', arch: '', version: c, hash: c.repeat(64), size: 1, source: 'api', binary: `/srv/${c}` });

function world(ttlSeconds = 100) {
  let nowMs = 1_790_000_000_000;
  const signed = { change: 0, renewal: 0, heartbeat: 0 };
  const statements = new ReleaseStatements(seed, ttlSeconds, { signed: (cause) => signed[cause]++ }, () => nowMs);
  const table = new TrackTable((all) => statements.sync(all));
  return { statements, table, signed, advance: (ms: number) => (nowMs += ms) };
}

t.test('a change of the table signs its statement before any lookup, and a lookup never signs', async (t) => {
  const { statements, table, signed } = world();
  const track = table.publish(target('a'), 3).track;
  t.equal(signed.change, 1);
  const slot = statements.slot(track);
  t.ok(verifyStatement(publicKeyHex(seed), { artifact: 'app', target_hash: track.hash, target_version: 'a' }, slot.release));
  t.equal(signed.heartbeat, 0, 'the lookup found it');
  table.publish(target('b'), 3);
  t.notOk(statements.holds(slot), 'the old target\'s statement is no longer kept');
  t.equal(statements.size, 1);
});

t.test('the timer renews a statement once 35 % of its life has passed, so a device never sees one past half its life', async (t) => {
  const { statements, table, advance } = world(100);
  const track = table.publish(target('a'), 3).track;
  const slot = statements.slot(track);
  const first = slot.release;
  advance(30_000);
  t.equal(statements.renew(), 0, 'at 30 % nothing is due');
  advance(6_000);
  t.equal(statements.renew(), 1);
  t.not(slot.release, first, 'the same slot holds the new statement');
  t.equal(slot.release.issued_at - first.issued_at, 36);
  t.equal(statements.renewalPeriodMs, 10_000, 'the timer runs every tenth of the life');
});

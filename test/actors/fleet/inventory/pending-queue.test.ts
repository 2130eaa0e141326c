import t from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import { PendingQueue, type PendingOwner } from '../../../../src/actors/fleet/inventory/pending-queue.js';

// The write buffer's columns (write-buffer.test.ts tests the buffer through them): a slot
// answers for its owner only while the owner's number is the slot's, and compaction keeps the
// live slots in order with each owner pointing at its own.

const record = (deviceId: string, receivedAtMs: number, versionHash = 'a'.repeat(64)): HeartbeatRecord => ({
  deviceId, versionHash, version: '1.0.0', artifact: 'app', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 2 ** 33, hwFreeDisk: 2 ** 40 + receivedAtMs, receivedAtMs, transport: 'coap',
});
const owner = (): PendingOwner => ({ seq: 0, slot: 0 });

t.test('a replaced slot goes stale; compaction keeps the live ones in order, each owner at its own', async (t) => {
  const q = new PendingQueue<PendingOwner>();
  const [a, b, c] = [owner(), owner(), owner()];
  q.push(a, 1, record('a', 10), 100);
  q.push(b, 2, record('b', 20), 100);
  q.push(c, 3, record('c', 30), 100);
  q.push(b, 4, record('b', 40), 100); // b's newer heartbeat
  a.seq = 0; // a's dropped
  t.same([0, 1, 2, 3].map((s) => q.isLive(s)), [false, false, true, true]);
  t.equal(q.owner(q.oldest()), c, 'the oldest live slot is c\'s');
  q.compact();
  t.equal(q.length, 2);
  t.same([c.slot, b.slot], [0, 1]);
  t.same(q.record(c.slot, 'c'), record('c', 30), 'every field of c\'s heartbeat, numbers unrounded');
  t.same(q.record(b.slot, 'b'), record('b', 40), 'b\'s newer heartbeat');
  q.clear();
  t.equal(q.length, 0);
  t.equal(q.oldest(), -1);
  q.push(a, 5, record('a', 50), 100);
  t.same(q.record(a.slot, 'a'), record('a', 50), 'written over after clear');
});

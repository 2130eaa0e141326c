import t from 'tap';
import type { HeartbeatRecord } from '../../../../src/messages/fleet.js';
import { heartbeatBytes, WriteBuffer } from '../../../../src/actors/fleet/inventory/write-buffer.js';

// A heartbeat that arrives while a flush is under way is classified against the version
// written before that flush. When the flush lands on another version, a pending heartbeat on
// the old one is a change again (a device that moved to B and came back to A within a flush:
// an update that failed its boot check and rolled back), and must not be dropped as a
// last_seen-only update (docs/fleet.md: a change of version is kept).

const H = (n: number) => n.toString(16).padStart(64, '0');
let clock = 0;
const hb = (deviceId: string, hash = H(1)): HeartbeatRecord => ({
  deviceId, versionHash: hash, version: '1.0.0', artifact: 'app', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1, hwFreeDisk: 2, transport: 'http', receivedAtMs: ++clock,
});
const one = heartbeatBytes(hb('dev-000'));

t.test('a device back on its old version during the flush of its move keeps that change', async (t) => {
  const b = new WriteBuffer(3 * one);
  b.addHeartbeat(hb('dev-001'));
  b.addHeartbeat(hb('dev-002'));
  b.written(b.take()); // both known at H(1)

  b.addHeartbeat(hb('dev-001', H(2))); // moved to H(2)
  const flush = b.take(); // the flush of the move is under way...
  b.addHeartbeat(hb('dev-001')); // ...when the device is back on H(1)
  b.written(flush); // the move landed: the database says H(2)
  t.same(b.pendingByClass, { seen: 0, first: 0, change: 1 }, 'back on H(1) is a change from what is written');

  b.addHeartbeat(hb('dev-002')); // last_seen only
  b.addHeartbeat(hb('dev-003'));
  b.addHeartbeat(hb('dev-004')); // over budget: one must go
  t.same(b.dropped, { last_seen: 1, new_device: 0, report_overflow: 0 });
  const kept = b.take().heartbeats.map((h) => [h.deviceId, h.versionHash]);
  t.ok(kept.some(([id, hash]) => id === 'dev-001' && hash === H(1)), 'the way back to H(1) is written');
  t.notOk(kept.some(([id]) => id === 'dev-002'), 'the last_seen-only update went instead');
});

t.test('a new device on another version by the time its first flush lands is a change', async (t) => {
  const b = new WriteBuffer(1 << 20);
  b.addHeartbeat(hb('dev-001'));
  const flush = b.take();
  b.addHeartbeat(hb('dev-001', H(2))); // a first sighting still: nothing written yet
  t.same(b.pendingByClass, { seen: 0, first: 1, change: 0 });
  b.written(flush); // remembered at H(1)
  t.same(b.pendingByClass, { seen: 0, first: 0, change: 1 });
  t.same(b.take().heartbeats.map((h) => h.versionHash), [H(2)]);
});

t.test('a flush that failed leaves the classes as they were', async (t) => {
  const b = new WriteBuffer(1 << 20);
  b.addHeartbeat(hb('dev-001'));
  b.written(b.take());
  b.addHeartbeat(hb('dev-001', H(2)));
  const flush = b.take();
  b.addHeartbeat(hb('dev-001'));
  b.putBack(flush); // the database still says H(1): back on it is last_seen only
  t.same(b.pendingByClass, { seen: 1, first: 0, change: 0 });
});

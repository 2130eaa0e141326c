import t from 'tap';
import type { HeartbeatRecord, ReportRecord } from '../../../../src/messages/fleet.js';
import { ADMIT_EVERY, heartbeatBytes, KNOWN_ENTRY_BYTES, WriteBuffer } from '../../../../src/actors/fleet/inventory/write-buffer.js';

const H = (n: number) => n.toString(16).padStart(64, '0');
let clock = 0;
function hb(deviceId: string, hash = H(1)): HeartbeatRecord {
  return { deviceId, versionHash: hash, version: '1.0.0', artifact: 'app', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1, hwFreeDisk: 2, transport: 'http', receivedAtMs: ++clock };
}
function report(deviceId: string): ReportRecord {
  return { deviceId, previousHash: H(1), newHash: H(2), success: true, rollbackReason: '', timestamp: 0, receivedAtMs: ++clock };
}
const one = heartbeatBytes(hb('dev-000'));

t.test('heartbeats of one device coalesce: the newest is written', async (t) => {
  const b = new WriteBuffer(1 << 20);
  b.addHeartbeat(hb('a'));
  b.addHeartbeat({ ...hb('a'), version: '1.0.1' });
  b.addHeartbeat(hb('b'));
  t.equal(b.pendingHeartbeats, 2);
  const taken = b.take();
  t.same(taken.heartbeats.map((h) => [h.deviceId, h.version]), [['a', '1.0.1'], ['b', '1.0.0']]);
  t.equal(b.bytes, 0, 'empty after take');
});

t.test('a full budget drops the oldest last_seen-only update first, never a version change', async (t) => {
  const b = new WriteBuffer(3 * one);
  b.addHeartbeat(hb('dev-001'));
  b.addHeartbeat(hb('dev-002'));
  b.addHeartbeat(hb('dev-003'));
  b.written(b.take()); // all three known at H(1)
  b.addHeartbeat(hb('dev-001')); // last_seen only
  b.addHeartbeat(hb('dev-002', H(2))); // a version change
  b.addHeartbeat(hb('dev-003')); // last_seen only
  b.addHeartbeat(hb('dev-002', H(2))); // still the change
  t.equal(b.pendingHeartbeats, 3);
  b.addHeartbeat(hb('dev-004')); // over budget: dev-001 goes first
  t.same(b.dropped, { last_seen: 1, new_device: 0, report_overflow: 0 });
  b.addHeartbeat(hb('dev-005'));
  t.same(b.dropped, { last_seen: 2, new_device: 0, report_overflow: 0 }, 'dev-003 next: still a last_seen-only update');
  b.addHeartbeat(hb('dev-006'));
  t.same(b.dropped, { last_seen: 2, new_device: 1, report_overflow: 0 }, 'then the oldest first sighting');
  const ids = b.take().heartbeats.map((h) => h.deviceId).sort();
  t.ok(ids.includes('dev-002'), 'the version change survived');
  t.notOk(ids.includes('dev-001') || ids.includes('dev-003'));
});

t.test('a heartbeat whose hash differs from the pending one stays a change even unknown', async (t) => {
  const b = new WriteBuffer(2 * one);
  b.addHeartbeat(hb('x'));
  b.addHeartbeat(hb('x', H(9)));
  b.addHeartbeat(hb('y'));
  b.addHeartbeat(hb('z'));
  t.equal(b.dropped.new_device, 1);
  t.ok(b.take().heartbeats.some((h) => h.deviceId === 'x' && h.versionHash === H(9)));
});

t.test('reports are kept over heartbeats; only reports alone past the budget lose the oldest', async (t) => {
  const b = new WriteBuffer(6 * one);
  for (let i = 0; i < 3; i++) b.addHeartbeat(hb(`d${i}`));
  for (let i = 0; i < 4; i++) b.addReport(report(`r${i}`));
  t.equal(b.pendingReports, 4, 'heartbeats made room');
  t.ok(b.dropped.new_device >= 1);
  for (let i = 4; i < 40; i++) b.addReport(report(`r${i}`));
  t.ok(b.dropped.report_overflow > 0);
  t.ok(b.bytes <= b.budgetBytes);
  t.equal(b.take().reports.at(-1)!.deviceId, 'r39', 'the newest are the ones kept');
});

t.test('a flood of random device ids cannot grow the buffer past its budget', async (t) => {
  const budget = 64 * 1024;
  const b = new WriteBuffer(budget);
  for (let i = 0; i < 100_000; i++) b.addHeartbeat(hb(`flood-${Math.random().toString(36).slice(2)}`));
  t.ok(b.bytes <= budget, `${b.bytes} bytes held`);
  t.equal(b.dropped.new_device + b.pendingHeartbeats, 100_000, 'every heartbeat is written or counted');
});

t.test('a failed flush puts its records back behind newer heartbeats of the same device', async (t) => {
  const b = new WriteBuffer(1 << 20);
  b.addHeartbeat(hb('a'));
  b.addHeartbeat(hb('b'));
  b.addReport(report('a'));
  const taken = b.take();
  b.addHeartbeat({ ...hb('a'), version: 'newer' });
  b.addReport(report('c'));
  b.putBack(taken);
  const again = b.take();
  t.same(again.heartbeats.map((h) => [h.deviceId, h.version]).sort(), [['a', 'newer'], ['b', '1.0.0']]);
  t.same(again.reports.map((r) => r.deviceId), ['a', 'c'], 'reports keep their order');
  t.ok(b.oldestReceivedAtMs() === undefined);
});

t.test('the device → version memory keeps the devices most recently new or moved, within its budget', async (t) => {
  const b = new WriteBuffer(2 * one, 3 * KNOWN_ENTRY_BYTES, 1); // every new device admitted: the order of forgetting
  for (let i = 0; i < 50; i++) {
    b.addHeartbeat(hb(`dev-${String(i).padStart(3, '0')}`));
    b.written(b.take());
  }
  t.equal(b.knownDevices, 3, 'bounded');
  // dev-049 is still known: its heartbeat is a last_seen-only update, dropped before a first sighting.
  b.addHeartbeat(hb('dev-049'));
  b.addHeartbeat(hb('dev-000'));
  b.addHeartbeat(hb('dev-100'));
  t.same(b.dropped, { last_seen: 1, new_device: 0, report_overflow: 0 });
  t.same(b.take().heartbeats.map((h) => h.deviceId), ['dev-000', 'dev-100'], 'dev-000 was forgotten: a first sighting again');
});

t.test('a fleet larger than the memory, checking in in turn, stays mostly remembered', async (t) => {
  const limit = 100;
  const fleet = 125;
  for (const admitEvery of [ADMIT_EVERY, 1]) {
    const b = new WriteBuffer(1024 * one, limit * KNOWN_ENTRY_BYTES, admitEvery);
    let firstSightings = 0;
    for (let round = 0; round < 20; round++) {
      // A flush every 10 heartbeats: shorter than the fleet's turn, as in the field.
      for (let i = 0; i < fleet; i += 10) {
        for (let j = i; j < Math.min(i + 10, fleet); j++) b.addHeartbeat(hb(`dev-${j}`));
        if (round === 19) firstSightings += b.pendingByClass.first;
        b.written(b.take());
      }
      t.ok(b.knownDevices <= limit && b.deviceEntries <= limit, `round ${round}: within the memory's bound`);
    }
    if (admitEvery === 1) {
      t.equal(firstSightings, fleet, 'admitting every device, each one is forgotten just before it checks in again');
    } else {
      t.ok(firstSightings <= fleet - limit + limit / 4, `${firstSightings} of ${fleet} heartbeats were first sightings (the memory holds ${limit})`);
    }
  }
  // A version change of a remembered device is still a change.
  const b = new WriteBuffer(1024 * one, limit * KNOWN_ENTRY_BYTES);
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < fleet; i++) {
      b.addHeartbeat(hb(`dev-${i}`));
      if (i % 10 === 9) b.written(b.take());
    }
    b.written(b.take());
  }
  for (let i = 0; i < fleet; i++) b.addHeartbeat(hb(`dev-${i}`, H(2)));
  t.ok(b.pendingByClass.change >= limit * 3 / 4, `${b.pendingByClass.change} of ${fleet} moves seen as changes`);
});

t.test('one device heartbeating without pause holds one record, and its replaced ones are let go', async (t) => {
  const budget = 64 * 1024;
  const b = new WriteBuffer(budget);
  b.addHeartbeat(hb('steady'));
  b.written(b.take());
  let most = 0;
  for (let i = 0; i < 20_000; i++) {
    b.addHeartbeat(hb('busy'));
    b.addHeartbeat(hb('steady'));
    most = Math.max(most, b.queuedSlots);
  }
  t.equal(b.pendingHeartbeats, 2);
  // Replaced heartbeats leave stale slots until a compaction: at most an eighth of the budget.
  t.ok(most * one <= budget / 8 + 3 * one, `at most ${most} slots held`);
  t.same(b.dropped, { last_seen: 0, new_device: 0, report_overflow: 0 });
  const taken = b.take();
  t.same(taken.heartbeats.map((h) => h.deviceId), ['steady', 'busy'], 'the known device is a last_seen update, the other a first sighting');
  t.equal(b.queuedSlots, 0);
});

t.test('a device dropped as a first sighting while its first flush is under way is remembered when that flush lands', async (t) => {
  const b = new WriteBuffer(one);
  b.addHeartbeat(hb('new'));
  const inFlight = b.take();
  b.addHeartbeat(hb('other'));
  b.addHeartbeat(hb('new')); // over budget: 'other', the oldest first sighting, is dropped
  b.addHeartbeat(hb('third')); // and now 'new' itself: never written, so it is forgotten
  t.equal(b.dropped.new_device, 2);
  b.written(inFlight);
  t.equal(b.knownDevices, 1);
  b.take();
  b.addHeartbeat(hb('new'));
  b.addHeartbeat(hb('fourth'));
  t.same(b.dropped, { last_seen: 1, new_device: 2, report_overflow: 0 }, "'new' is known now: its heartbeat goes first, as a last_seen update");
});

t.test('a known device forgotten while its heartbeat waits, and that heartbeat then dropped, leaves no entry behind', async (t) => {
  const b = new WriteBuffer(2 * one, KNOWN_ENTRY_BYTES, 1); // every new device admitted, so d_i is forgotten each time
  for (let i = 0; i < 50; i++) {
    b.addHeartbeat(hb(`d${i}`));
    b.written(b.take());
    b.addHeartbeat(hb(`e${i}`));
    const inFlight = b.take();
    b.addHeartbeat(hb(`d${i}`)); // a last_seen update
    b.written(inFlight); // e_i is remembered; d_i, the only one before, is forgotten
    b.addHeartbeat(hb(`f${i}`));
    b.addHeartbeat(hb(`g${i}`)); // over budget: d_i's update is dropped first
    b.written(b.take());
  }
  t.equal(b.knownDevices, 1, 'one remembered, as the budget allows');
  t.equal(b.deviceEntries, 1, 'and no entry holding nothing');
});

t.test('a flush that lands after its device was forgotten and seen again is recorded on the newer entry', async (t) => {
  const b = new WriteBuffer(one);
  b.addHeartbeat(hb('a'));
  const inFlight = b.take();
  b.addHeartbeat(hb('a'));
  b.addHeartbeat(hb('x')); // drops a's first sighting: its entry is forgotten
  b.addHeartbeat(hb('a')); // a newer entry for a; x is dropped
  b.written(inFlight);
  t.equal(b.knownDevices, 1, 'a is remembered at the version that landed');
  b.take();
  b.addHeartbeat(hb('a', H(2)));
  b.addHeartbeat(hb('y'));
  t.equal(b.dropped.new_device, 3, 'y, not a: a moving to another version is a change, never dropped');
  t.ok(b.take().heartbeats.some((h) => h.deviceId === 'a' && h.versionHash === H(2)));
});

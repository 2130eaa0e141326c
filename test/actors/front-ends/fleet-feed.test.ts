import t from 'tap';
import { HeartbeatPacker, unpackHeartbeats } from '../../../src/messages/fleet-batch.js';
import { FleetFeed, reportRecord } from '../../../src/actors/front-ends/fleet-feed.js';
import type { FleetBatch, HeartbeatRecord, PackedHeartbeats } from '../../../src/messages/fleet.js';
import type { Heartbeat } from '../../../src/shared/wire/validate.js';

const unpacked = (packed: PackedHeartbeats) => {
  const records: HeartbeatRecord[] = [];
  unpackHeartbeats(packed, (r) => records.push(r));
  return records;
};

const hash = 'a'.repeat(64);
/** A validated heartbeat of `deviceId`. */
const heartbeat = (deviceId: string, more: Partial<Heartbeat> = {}): Heartbeat => ({
  deviceId, versionHash: hash, artifact: '', version: '1.2.3', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 10, hwFreeDisk: 20, timestamp: 5, ...more,
});

t.test('records wait a moment and travel together, after the answer', async (t) => {
  const sent: FleetBatch[] = [];
  const feed = new FleetFeed((batch) => void sent.push(batch));
  feed.heartbeat(heartbeat('d1'), 'coap', 1000);
  feed.report(reportRecord({ deviceId: 'd1', previousHash: '', newHash: hash, success: false, rollbackReason: 'boot', timestamp: 5 }, 2000));
  t.equal(sent.length, 0, 'not on the answer path: nothing is sent synchronously');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(sent.length, 1);
  t.same(unpacked(sent[0]!.heartbeats), [{ deviceId: 'd1', versionHash: hash, version: '1.2.3', artifact: '', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 10, hwFreeDisk: 20, transport: 'coap', receivedAtMs: 1000 }]);
  t.same(sent[0]!.reports, [{ deviceId: 'd1', previousHash: '', newHash: hash, success: false, rollbackReason: 'boot', timestamp: 5, receivedAtMs: 2000 }]);
});

t.test('a fleet actor that is away costs records, counted, never an exception', async (t) => {
  const feed = new FleetFeed(() => {
    throw new Error('not connected');
  });
  for (let i = 0; i < 3; i++) feed.heartbeat(heartbeat(`d${i}`, { artifact: 'app' }), 'http', 0);
  feed.flush();
  t.equal(feed.lost, 3);
  const rejecting = new FleetFeed(async () => {
    throw new Error('restarting');
  });
  rejecting.report(reportRecord({ deviceId: 'x', previousHash: '', newHash: '', success: true, rollbackReason: '', timestamp: 0 }, 0));
  rejecting.flush();
  await new Promise((r) => setImmediate(r));
  t.equal(rejecting.lost, 1);
});

t.test('the inventory turned off: records go nowhere', async (t) => {
  const feed = new FleetFeed(undefined);
  feed.heartbeat(heartbeat('d'), 'http', 0);
  feed.flush();
  t.equal(feed.lost, 0);
});

t.test('packed heartbeats come back field for field, whatever their text holds', async (t) => {
  const packer = new HeartbeatPacker(4);
  const odd = ['', 'a\u0000b', '\u0001\u0002', 'tab\tnew\nline', 'é€😀', 'x'.repeat(200)];
  const expected: HeartbeatRecord[] = [];
  for (let i = 0; i < 4; i++) {
    const [version, arch, os, artifact] = [odd[i]!, odd[(i + 1) % odd.length]!, odd[(i + 2) % odd.length]!, i === 3 ? odd[5]! : odd[i + 1]!];
    const validated = heartbeat(`dev-${odd[4]}-${i}`, { version, artifact, hwArch: arch, hwOs: os, hwFreeRam: 2 ** 53 - 1 - i, hwFreeDisk: i });
    t.ok(packer.add(validated, i % 2 ? 'coap' : 'http', 1_800_000_000_000 + i));
    expected.push({ deviceId: `dev-${odd[4]}-${i}`, versionHash: hash, version, artifact, hwArch: arch, hwOs: os, hwFreeRam: 2 ** 53 - 1 - i, hwFreeDisk: i, transport: i % 2 ? 'coap' : 'http', receivedAtMs: 1_800_000_000_000 + i });
  }
  t.notOk(packer.add(heartbeat('one-too-many'), 'http', 0), 'a full packer refuses');
  const packed = packer.take();
  t.equal(packed.count, 4);
  t.same(unpacked(packed), expected);
  t.equal(packer.take().count, 0, 'empty after take');
  t.same(unpacked(structuredClone(packed)), expected, 'the same after crossing a thread boundary');
});

t.test('each text but the device id travels once a batch, and a batch after take() stands alone', async (t) => {
  const packer = new HeartbeatPacker(8);
  const versions = ['1.0', '2.0', '1.0', '2.0'];
  versions.forEach((version, i) => packer.add(heartbeat(`d${i}`, { version }), 'http', i));
  const first = packer.take();
  // Four device ids, then the hash, two versions, the artifact, arch and os: once each.
  t.equal(first.strings.length, 4 + 6, 'repeated texts are referenced, not copied');
  t.same(unpacked(first).map((r) => r.version), versions);
  packer.add(heartbeat('d9', { version: '2.0' }), 'coap', 9);
  const second = packer.take();
  t.equal(second.strings.length, 6, 'the second batch carries its own texts');
  t.same(unpacked(second), [{ deviceId: 'd9', versionHash: hash, version: '2.0', artifact: '', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 10, hwFreeDisk: 20, transport: 'coap', receivedAtMs: 9 }]);
});

t.test('attributes travel beside the packed heartbeats, only for the heartbeats that carried them', async (t) => {
  const sent: FleetBatch[] = [];
  const feed = new FleetFeed((batch) => void sent.push(batch));
  feed.heartbeat(heartbeat('plain'), 'http', 0);
  feed.flush();
  t.notOk('attributes' in sent[0]!, 'a batch without attributes has no list at all');
  feed.heartbeat(heartbeat('d1', { attributes: { site: 'lab' } }), 'http', 0);
  feed.heartbeat(heartbeat('d2'), 'coap', 0);
  feed.heartbeat(heartbeat('d3', { attributes: {} }), 'coap', 0);
  feed.flush();
  t.same(sent[1]!.attributes, [{ deviceId: 'd1', attributes: { site: 'lab' } }, { deviceId: 'd3', attributes: {} }], 'an empty set is sent: it clears the stored one');
  t.equal(sent[1]!.heartbeats.count, 3);
  t.same(structuredClone(sent[1]!.attributes), sent[1]!.attributes, 'plain data for postMessage');
});

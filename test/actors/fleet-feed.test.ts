import t from 'tap';
import { FleetFeed, heartbeatRecord, reportRecord } from '../../src/actors/fleet-feed.js';
import type { FleetBatch } from '../../src/messages/fleet.js';

const hash = 'a'.repeat(64);

t.test('records wait a moment and travel together, after the answer', async (t) => {
  const sent: FleetBatch[] = [];
  const feed = new FleetFeed((batch) => void sent.push(batch));
  const fields = { device_id: 'd1', version_hash: hash, version: '1.2.3', hw_info: { arch: 'arm64', os: 'linux', free_ram: 10n, free_disk: 20 } };
  feed.heartbeat(heartbeatRecord(fields, { deviceId: 'd1', versionHash: hash, artifact: '' }, 'coap', 1000));
  feed.report(reportRecord({ deviceId: 'd1', previousHash: '', newHash: hash, success: false, rollbackReason: 'boot', timestamp: 5 }, 2000));
  t.equal(sent.length, 0, 'not on the answer path: nothing is sent synchronously');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(sent.length, 1);
  t.same(sent[0]!.heartbeats, [{ deviceId: 'd1', versionHash: hash, version: '1.2.3', artifact: '', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 10, hwFreeDisk: 20, transport: 'coap', receivedAtMs: 1000 }]);
  t.same(sent[0]!.reports, [{ deviceId: 'd1', previousHash: '', newHash: hash, success: false, rollbackReason: 'boot', timestamp: 5, receivedAtMs: 2000 }]);
});

t.test('a fleet actor that is away costs records, counted, never an exception', async (t) => {
  const feed = new FleetFeed(() => {
    throw new Error('not connected');
  });
  for (let i = 0; i < 3; i++) feed.heartbeat(heartbeatRecord({}, { deviceId: `d${i}`, versionHash: hash, artifact: 'app' }, 'http', 0));
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
  feed.heartbeat(heartbeatRecord({}, { deviceId: 'd', versionHash: hash, artifact: '' }, 'http', 0));
  feed.flush();
  t.equal(feed.lost, 0);
});

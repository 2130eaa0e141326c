import { createSocket } from 'node:dgram';
import t from 'tap';
import { generate } from 'coap-packet';
import { startCoapTestServer } from '../../../helpers/coap.js';
import { firmware, makeFixture } from '../../../helpers/fixture.js';
import { getBytes, metricValue } from '../../../helpers/http.js';

// A flood of distinct small CoAP requests must cost the coap thread no more than
// coap.dedup_cache_bytes: node-coap held about 4.6 KB of heap per answer for 100 s (a timer
// per sender) and counted 45 bytes of it, so 60,000 malformed heartbeats took the thread's
// heap from 10 to 132 MB under a 1 MiB budget (issue 16, memory after hostile traffic).

const MB = 1024 * 1024;
const FLOOD = 20_000;

/** Waits until `count()` reaches `target`, or until it has not moved for a second. */
async function answersUpTo(count: () => number, target: number): Promise<void> {
  let last = count();
  let still = Date.now();
  while (count() < target) {
    await new Promise((r) => setTimeout(r, 2));
    if (count() !== last) {
      last = count();
      still = Date.now();
    } else if (Date.now() - still > 1_000) {
      return;
    }
  }
}

t.test('a flood of distinct requests stays within the duplicate cache budget', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1 = await fixture.writeBinary('v1.bin', firmware(4096, 'dedup'));
  const s = await startCoapTestServer(fixture, [{ name: 'app', version: '1', binary: v1.path }], { coap: { dedup_cache_bytes: MB } });
  t.teardown(() => s.stop());
  const metrics = async () => (await getBytes(`${s.server.url}/metrics`)).body.toString();
  const heapUsed = async () => metricValue(await metrics(), 'updater_actor_heap_bytes', { actor: 'coap', kind: 'used' });
  const before = await heapUsed();
  t.ok(before > 0, `the coap thread's heap is exported (${(before / MB).toFixed(1)} MB)`);

  const socket = createSocket('udp4');
  let received = 0;
  socket.on('message', () => received++);
  t.teardown(() => socket.close());
  // Counted by the server: the flooding client may lose answers in its own socket buffer.
  const answered = async () => (await metrics()).split('\n').filter((l) => l.startsWith('updater_coap_request_seconds_count')).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  // Sent WINDOW at a time, each window once the last is answered: paced by the server's own
  // progress, not by a rate, so that a slow or busy machine does not overflow the socket
  // buffers and drop most of the flood. A window whose answers stop coming for a second
  // (lost on the way back) does not hold the flood up.
  const WINDOW = 100;
  for (let id = 1; id <= FLOOD; id++) {
    // A heartbeat whose body is the CBOR integer 1: answered 4.00 with a short payload.
    socket.send(generate({ code: 'POST', confirmable: true, messageId: id & 0xffff, token: Buffer.from([id & 0xff, (id >> 8) & 0xff, 0x7e, 0x57]), options: [{ name: 'Uri-Path', value: Buffer.from('heartbeat') }, { name: 'Content-Format', value: Buffer.from([60]) }] as never, payload: Buffer.from([0x01]) }), s.coapPort, '127.0.0.1');
    if (id % WINDOW === 0) await answersUpTo(() => received, id);
  }
  const answers = await answered();
  t.ok(answers >= FLOOD * 0.95, `${answers} of ${FLOOD} requests answered`);

  const text = await metrics();
  t.ok(metricValue(text, 'updater_coap_dedup_cache_bytes') <= MB, 'the cache stays within its budget');
  const grown = (await heapUsed()) - before;
  // Under the old accounting the growth was ~4.6 KB × answers (≥ 36 MB here); the young
  // generation alone may hold up to 8 MB of garbage between collections.
  t.ok(grown < 28 * MB, `the coap thread's heap grew ${(grown / MB).toFixed(1)} MB for ${answers} answers (budget 1 MiB)`);
  t.equal((await s.client.heartbeat(v1.hash)).code, '2.05', 'and a good heartbeat is answered after the flood');
});

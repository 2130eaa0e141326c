import t from 'tap';
import { InFlight } from '../../../../src/actors/coap/datagrams/in-flight.js';

t.test('admits up to the limit and again after a leave', async (t) => {
  const gate = new InFlight(2);
  t.ok(gate.tryEnter());
  t.ok(gate.tryEnter());
  t.notOk(gate.tryEnter(), 'the third is refused');
  gate.leave();
  t.ok(gate.tryEnter());
  t.equal(gate.count, 2);
});

t.test('idle resolves once the last request leaves', async (t) => {
  const gate = new InFlight(1);
  gate.tryEnter();
  let idle = false;
  const waiting = gate.idle(60_000).then(() => (idle = true));
  await new Promise((r) => setImmediate(r));
  t.notOk(idle);
  gate.leave();
  await waiting;
  t.ok(idle);
});

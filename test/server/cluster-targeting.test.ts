import t from 'tap';
import { startCluster } from '../helpers/cluster.js';
import { CoapClient } from '../helpers/coap.js';
import { decisionsCase } from './targeting-decisions-case.js';

// The targeting decisions (targeting-decisions-case.ts) in a cluster of two replicas over one
// PostgreSQL database, each with its CoAP listener: the operator calls one replica and the
// device's heartbeats reach the other, swapping at each point, so groups, tags and rollouts
// must travel through the shared database, and a tag or group change must decide the other
// replica's answers within the documented 2 s. One cluster serves every point.

t.setTimeout(480_000);

decisionsCase('postgres, two replicas', async (t) => {
  const cluster = await startCluster(t, 2, [], { fleet: { flush_interval: '100ms' } }, { coap: true });
  const sides = cluster.replicas.map((r) => ({ url: r.url, coap: new CoapClient(r.coapPort!) }));
  t.teardown(() => sides.forEach((side) => side.coap.close()));
  return {
    fixture: cluster.fixture,
    sides: (point) => ({ operator: sides[point % 2]!.url, device: sides[(point + 1) % 2]! }),
    propagationMs: 2_000,
    startDelaySeconds: 5,
  };
});

import coap, { type IncomingMessage, type OutgoingMessage } from 'coap';
import { boundDedupCache } from '../src/actors/coap/datagrams/dedup-cache.js';
import { heartbeatFields } from '../src/shared/wire/cbor.js';
import { validateHeartbeat } from '../src/shared/wire/validate.js';

// The baseline of the CoAP benchmark: a bare node-coap server in its own process that does
// what the front-end does for a heartbeat, minus the actor system: decode and validate the
// CBOR heartbeat, answer a CBOR manifest (the exact bytes the real server answered). Its
// duplicate cache is bounded as the server's is (dedup-cache.ts): node-coap's own keeps a
// 100 s timer and a sender alive per answer, which cost this baseline more CPU per heartbeat
// than the whole server spent (113 to 197 against 66 to 138 us, 100,000 device ids).
//   node dist/bench/coap-bare-server.js PORT MANIFEST_HEX DEDUP_CACHE_BYTES

const [portText, manifestHex, cacheText] = process.argv.slice(2);
const manifest = Buffer.from(manifestHex ?? '', 'hex');
const server = coap.createServer({ cacheSize: Number(cacheText) }, (req: IncomingMessage, res: OutgoingMessage) => {
  try {
    validateHeartbeat(heartbeatFields(req.payload));
  } catch {
    res.code = '4.00';
    res.end();
    return;
  }
  res.setOption('Content-Format', 'application/cbor');
  res.end(manifest);
});
boundDedupCache(server);
server.listen(Number(portText), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});

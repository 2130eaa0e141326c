import type { AddressInfo } from 'node:net';
import { createServer, type IncomingMessage, type OutgoingMessage, type Server } from 'coap';
import { encodeManifest, heartbeatFields, reportFields } from '../../src/shared/wire/cbor.js';

// A CoAP front on 127.0.0.1 for agent tests, translating to the real server's HTTP API:
// CBOR bodies with the integer keys of docs/protocol.md ("Encodings"), Block2 downloads served by node-coap's
// own server-side segmentation. It stands in for the server's CoAP front-end so the agent's
// CoAP transport is exercised over real UDP.

export interface CoapBridge {
  readonly url: string;
  readonly requests: Array<{ method: string; url: string; block2?: number }>;
  reports: any[];
  close(): Promise<void>;
}

export async function startCoapBridge(httpUrl: string): Promise<CoapBridge> {
  const bridge: CoapBridge = { url: '', requests: [], reports: [], close: async () => undefined };
  const server: Server = createServer();
  // The agent asks for each Block2 block with a token of its own, so node-coap hands every block
  // request to the handler: a fetch of the whole file per 1 KiB block. Deltas and binaries are
  // named by their hash and never change, so each is fetched once and kept.
  const files = new Map<string, Buffer>();
  server.on('request', (req: IncomingMessage, res: OutgoingMessage) => {
    handle(req, res).catch(() => {
      res.code = '5.00';
      res.end();
    });
  });

  async function handle(req: IncomingMessage, res: OutgoingMessage): Promise<void> {
    const block2 = (req._packet.options ?? []).find((o) => o.name === 'Block2')?.value as Buffer | undefined;
    bridge.requests.push({ method: req.method, url: req.url, ...(block2 ? { block2: block2.length ? block2.readUIntBE(0, block2.length) >> 4 : 0 } : {}) });
    if (req.method === 'POST' && (req.url === '/heartbeat' || req.url === '/report')) {
      const isHeartbeat = req.url === '/heartbeat';
      // Integers above 2^32 travel as CBOR uint64 and decode as BigInt, which JSON cannot carry.
      const body = (isHeartbeat ? heartbeatFields : reportFields)(req.payload);
      if (!isHeartbeat) bridge.reports.push(body);
      const response = await fetch(`${httpUrl}${req.url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body, (_key, value) => (typeof value === 'bigint' ? Number(value) : value)) });
      const text = await response.text();
      if (!isHeartbeat) {
        res.code = response.status < 300 ? '2.04' : '4.00';
        res.end();
        return;
      }
      if (response.status !== 200) {
        res.code = response.status === 404 ? '4.04' : response.status >= 500 ? '5.03' : '4.00';
        res.end();
        return;
      }
      res.code = '2.05';
      res.setOption('Content-Format', 'application/cbor');
      res.end(encodeManifest(JSON.parse(text)));
      return;
    }
    if (req.method === 'GET' && /^\/(delta|binary)\//.test(req.url)) {
      let bytes = files.get(req.url);
      if (!bytes) {
        const response = await fetch(`${httpUrl}${req.url}`);
        if (response.status !== 200) {
          res.code = '4.04';
          res.end();
          return;
        }
        bytes = Buffer.from(await response.arrayBuffer());
        files.set(req.url, bytes);
      }
      res.code = '2.05';
      res.end(bytes);
      return;
    }
    res.code = '4.04';
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = ((server as unknown as { _sock: { address(): AddressInfo } })._sock.address()).port;
  (bridge as { url: string }).url = `coap://127.0.0.1:${port}`;
  bridge.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return bridge;
}

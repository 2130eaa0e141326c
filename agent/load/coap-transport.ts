import { createHash } from 'node:crypto';
import coap from 'coap';
import type { Manifest } from '../../src/messages/manifester.js';
import { decodeManifest } from '../../src/shared/wire/cbor.js';
import type { HeartbeatAnswer } from './http-transport.js';

// The harness's CoAP client: node-coap over one UDP socket (its Agent), confirmable requests
// with node-coap's own retransmission, Block2 downloads reassembled by node-coap. Status
// codes are mapped onto their HTTP counterparts so the report reads the same for both.

const STATUS_OF: Record<string, number> = { '2.05': 200, '2.04': 204, '4.00': 400, '4.04': 404, '4.13': 413, '5.03': 503, '5.00': 500 };

export class CoapLoadClient {
  private readonly agent: InstanceType<typeof coap.Agent>;
  private readonly host: string;
  private readonly port: number;

  constructor(coapUrl: string) {
    const url = new URL(coapUrl);
    if (url.protocol !== 'coap:') throw new Error(`--coap-url must be a coap:// address (got ${coapUrl})`);
    this.host = url.hostname;
    this.port = Number(url.port || 5683);
    this.agent = new coap.Agent({ type: 'udp4' });
  }

  heartbeat(body: Buffer): Promise<HeartbeatAnswer> {
    return new Promise((resolve, reject) => {
      const req = coap.request({
        hostname: this.host, port: this.port, method: 'POST', pathname: '/heartbeat', confirmable: true, agent: this.agent,
        options: { 'Content-Format': 'application/cbor' },
      });
      req.on('response', (res) => {
        const status = STATUS_OF[String(res.code)] ?? 0;
        let manifest: Manifest | undefined;
        if (status === 200) {
          try {
            manifest = decodeManifest(res.payload) as unknown as Manifest;
          } catch {
            reject(new Error('malformed manifest'));
            return;
          }
        }
        resolve({ status, manifest, bytesUp: body.length, bytesDown: res.payload.length });
      });
      req.on('timeout', () => reject(new Error('timeout')));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Sends an update report (CBOR with integer keys); resolves with the status mapped to HTTP (204 expected). */
  report(body: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = coap.request({
        hostname: this.host, port: this.port, method: 'POST', pathname: '/report', confirmable: true, agent: this.agent,
        options: { 'Content-Format': 'application/cbor' },
      });
      req.on('response', (res) => resolve(STATUS_OF[String(res.code)] ?? 0));
      req.on('timeout', () => reject(new Error('timeout')));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Fetches a whole transfer by Block2 (node-coap asks block after block). */
  download(path: string): Promise<{ status: number; size: number; hash: string }> {
    return new Promise((resolve, reject) => {
      const req = coap.request({ hostname: this.host, port: this.port, method: 'GET', pathname: path, confirmable: true, agent: this.agent, options: { Block2: Buffer.from([0x06]) } });
      req.on('response', (res) => {
        resolve({ status: STATUS_OF[String(res.code)] ?? 0, size: res.payload.length, hash: createHash('sha256').update(res.payload).digest('hex') });
      });
      req.on('timeout', () => reject(new Error('timeout')));
      req.on('error', reject);
      req.end();
    });
  }

  close(): void {
    this.agent.close();
  }
}

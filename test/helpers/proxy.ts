import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A small HTTP proxy on 127.0.0.1 between an agent and the real server, to play a bad
// network or a hostile server: cut a download after N bytes, flip a byte, forge a manifest,
// fail heartbeats. It records what the agent asked for.

export interface ProxyRecord {
  method: string;
  url: string;
  range?: string;
}

export interface Proxy {
  readonly url: string;
  readonly requests: ProxyRecord[];
  /** Response body bytes of downloads passed to the agent. */
  downloadBytes: number;
  reports: any[];
  /** Next download: close the connection after this many body bytes. */
  cutNextDownloadAfter?: number;
  /** Next download: after this many body bytes, send nothing more but keep the connection open. */
  stallNextDownloadAfter?: number;
  /** Every download: flip the bits of the byte at this body offset. */
  corruptDownloadAt?: number;
  /** Heartbeats answered 503 before the real server is asked again. */
  failHeartbeats: number;
  rewriteHeartbeat?: (body: any) => any;
  rewriteManifest?: (manifest: any) => any;
  /** Maps the path the agent asked for to the one sent upstream. */
  rewritePath?: (url: string) => string;
  downloads(): ProxyRecord[];
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

export async function startProxy(upstream: string, port = 0): Promise<Proxy> {
  const target = new URL(upstream);
  const proxy: Proxy = {
    url: '',
    requests: [],
    downloadBytes: 0,
    reports: [],
    failHeartbeats: 0,
    downloads: () => proxy.requests.filter((r) => r.method === 'GET' && /^\/(delta|binary)\//.test(r.url)),
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    proxy.requests.push({ method: req.method ?? '', url, ...(req.headers.range ? { range: req.headers.range } : {}) });
    let body = await readBody(req);
    if (url === '/heartbeat' && proxy.failHeartbeats > 0) {
      proxy.failHeartbeats--;
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"code":"TEST","message":"proxy says no"}}');
      return;
    }
    if (url === '/heartbeat' && proxy.rewriteHeartbeat) body = Buffer.from(JSON.stringify(proxy.rewriteHeartbeat(JSON.parse(body.toString()))));
    if (url === '/report') proxy.reports.push(JSON.parse(body.toString()));
    const headers = { ...req.headers, host: target.host, 'content-length': String(body.length) };
    const upstreamPath = proxy.rewritePath ? proxy.rewritePath(url) : url;
    const upstreamReq = request({ host: target.hostname, port: target.port, method: req.method, path: upstreamPath, headers }, (up) => {
      const isDownload = /^\/(delta|binary)\//.test(url);
      if (url === '/heartbeat' && up.statusCode === 200 && proxy.rewriteManifest) {
        readBody(up).then((raw) => {
          const text = JSON.stringify(proxy.rewriteManifest!(JSON.parse(raw.toString())));
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
        }, () => res.destroy());
        return;
      }
      res.writeHead(up.statusCode ?? 502, up.headers);
      if (!isDownload) {
        up.pipe(res);
        return;
      }
      const cutAfter = proxy.cutNextDownloadAfter;
      proxy.cutNextDownloadAfter = undefined;
      const stallAfter = proxy.stallNextDownloadAfter;
      proxy.stallNextDownloadAfter = undefined;
      let passed = 0;
      up.on('data', (chunk: Buffer) => {
        let out = chunk;
        if (stallAfter !== undefined && passed + out.length >= stallAfter) {
          const head = out.subarray(0, stallAfter - passed);
          passed += head.length;
          proxy.downloadBytes += head.length;
          res.write(head);
          up.pause();
          up.removeAllListeners('data');
          up.removeAllListeners('end');
          return;
        }
        if (proxy.corruptDownloadAt !== undefined && proxy.corruptDownloadAt >= passed && proxy.corruptDownloadAt < passed + chunk.length) {
          out = Buffer.from(chunk);
          const at = proxy.corruptDownloadAt - passed;
          out[at] = (out[at] ?? 0) ^ 0xff;
        }
        if (cutAfter !== undefined && passed + out.length >= cutAfter) {
          const head = out.subarray(0, cutAfter - passed);
          proxy.downloadBytes += head.length;
          passed += head.length;
          res.write(head, () => res.destroy());
          up.destroy();
          return;
        }
        passed += out.length;
        proxy.downloadBytes += out.length;
        res.write(out);
      });
      up.once('end', () => res.end());
      up.once('error', () => res.destroy());
    });
    upstreamReq.once('error', () => res.destroy());
    upstreamReq.end(body);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  (proxy as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

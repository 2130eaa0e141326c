import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { UpdaterError } from '../../../shared/errors.js';
import { packageRoot } from '../../../shared/package-root.js';
import type { Logger } from '../../../shared/logger.js';
import { checkedEncodings, compressConsoleFile } from './console-encodings.js';
import type { HttpMetrics } from '../server/metrics.js';
import { exchange, sendError, statusLine, type Exchange } from '../server/respond.js';

// The operator console (docs/console.md): a page and two bundles that `npm run build` writes
// to dist/console, read once at start and served from memory, compressed ahead of time (by the build:
// console-encodings.ts).
//
//   GET /console/                 index.html, revalidated on every load (no-cache + ETag)
//   GET /console/assets/<n>-<h>   the bundles; the content hash is in the name, so they are
//                                 cached for a year and never revalidated
//
// None of it is secret: the page asks for the admin token and calls /admin/* itself. The
// policy below lets the page load only its own script and stylesheet and talk only to this
// origin; nothing is fetched from anywhere else.

export const CONSOLE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'", "require-trusted-types-for 'script'",
].join('; ');

const COMMON_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  Vary: 'Accept-Encoding',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8', '.map': 'application/json',
};

export interface ConsoleAsset {
  readonly type: string;
  readonly etag: string;
  readonly cacheControl: string;
  readonly encodings: { readonly identity: Buffer; readonly br: Buffer; readonly gzip: Buffer };
}

/** URL path → asset. Empty when the console was not built. */
export type ConsoleAssets = ReadonlyMap<string, ConsoleAsset>;

/** Where `npm run build` puts the console: dist/console, beside dist/src. */
export const CONSOLE_DIR = join(packageRoot(import.meta.url), 'dist', 'console');

export async function loadConsoleAssets(dir = CONSOLE_DIR): Promise<ConsoleAssets> {
  const assets = new Map<string, ConsoleAsset>();
  let index: Buffer;
  try {
    index = await readFile(join(dir, 'index.html'));
  } catch {
    return assets;
  }
  assets.set('/console/', await asset(join(dir, 'index.html'), index, '.html', REVALIDATE));
  for (const name of await readdir(join(dir, 'assets'))) {
    const type = extname(name);
    if (!(type in TYPES)) continue;
    const path = join(dir, 'assets', name);
    assets.set(`/console/assets/${name}`, await asset(path, await readFile(path), type, IMMUTABLE));
  }
  return assets;
}

/** The file with its encodings: the build's (`.br`, `.gz` beside it) when they match, else made now. */
async function asset(path: string, body: Buffer, ext: string, cacheControl: string): Promise<ConsoleAsset> {
  const built = checkedEncodings(body, await readFile(`${path}.br`).catch(() => undefined), await readFile(`${path}.gz`).catch(() => undefined));
  return {
    type: TYPES[ext]!,
    etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"`,
    cacheControl,
    encodings: { identity: body, ...(built ?? compressConsoleFile(body)) },
  };
}

/** The encoding to send for an Accept-Encoding header: br, then gzip, else none. */
export function chooseEncoding(acceptEncoding: string): 'br' | 'gzip' | 'identity' {
  const offered = new Map<string, number>();
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [name = '', ...params] = part.trim().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)).find(Boolean);
    offered.set(name.trim(), q ? Number(q[1]) : 1);
  }
  const accepts = (name: string) => (offered.get(name) ?? offered.get('*') ?? 0) > 0;
  if (accepts('br')) return 'br';
  if (accepts('gzip')) return 'gzip';
  return 'identity';
}

function matchesEtag(ifNoneMatch: string, etag: string): boolean {
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

export interface ConsoleDeps {
  assets: ConsoleAssets;
  metrics: HttpMetrics;
  log: Logger;
}

export function registerConsoleRoutes(apps: readonly TemplatedApp[], deps: ConsoleDeps): void {
  const { assets, metrics } = deps;
  if (assets.size === 0) deps.log.warn('the console is not built (npm run build writes dist/console): /console/ answers 404');

  const serve = (res: HttpResponse, req: HttpRequest, head: boolean) => {
    const ex = exchange(res);
    const stop = metrics.startRequest('console');
    const url = req.getUrl();
    const found = assets.get(url);
    if (url === '/console' && assets.size > 0) {
      write(ex, 301, { ...COMMON_HEADERS, Location: '/console/' }, undefined, head);
    } else if (!found) {
      sendError(ex, new UpdaterError('NOT_FOUND', assets.size === 0 ? 'the console is not built on this server' : 'no such console file'), COMMON_HEADERS);
    } else if (matchesEtag(req.getHeader('if-none-match'), found.etag)) {
      write(ex, 304, { ...COMMON_HEADERS, ETag: found.etag, 'Cache-Control': found.cacheControl }, undefined, true);
    } else {
      const encoding = chooseEncoding(req.getHeader('accept-encoding'));
      const headers: Record<string, string> = { ...COMMON_HEADERS, 'Content-Type': found.type, ETag: found.etag, 'Cache-Control': found.cacheControl };
      if (encoding !== 'identity') headers['Content-Encoding'] = encoding;
      write(ex, 200, headers, found.encodings[encoding], head);
    }
    stop(ex.status ?? 499);
  };

  for (const app of apps) {
    for (const path of ['/console', '/console/*']) {
      app.get(path, (res, req) => serve(res, req, false));
      app.head(path, (res, req) => serve(res, req, true));
      app.any(path, (res) => sendError(exchange(res), new UpdaterError('METHOD_NOT_ALLOWED'), { Allow: 'GET, HEAD' }));
    }
  }
}

function write(ex: Exchange, status: number, headers: Record<string, string>, body: Buffer | undefined, head: boolean): void {
  if (ex.aborted || ex.done) return;
  ex.done = true;
  ex.status = status;
  ex.res.cork(() => {
    ex.res.writeStatus(statusLine(status));
    for (const [name, value] of Object.entries(headers)) ex.res.writeHeader(name, value);
    if (!head) {
      ex.res.end(body ?? '');
    } else {
      // endWithoutBody(length) of this uWS build expects the body to follow and closes the
      // keep-alive connection; the header written by hand keeps it open.
      if (body) ex.res.writeHeader('Content-Length', String(body.length));
      ex.res.endWithoutBody();
    }
  });
}

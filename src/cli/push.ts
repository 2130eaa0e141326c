import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { parseArgs } from 'node:util';
import { parseTrackKey } from '../shared/artifact-key.js';
import { parseRolloutPlan } from '../shared/rollout-plan.js';
import { versionLabelProblem } from '../shared/version-label.js';

// `updater push`: the one line a build pipeline runs to ship a build. It hashes the file
// locally, streams it to PUT /admin/binaries with that hash as X-Content-SHA256 (the server
// refuses bytes that arrive otherwise and keeps nothing of them), then publishes the track by
// hash. Nothing but the file is read into the store, and the file is never held in memory.

export const PUSH_HELP = `usage: updater push FILE --track KEY --version V [--rollout JSON] [--server URL]

Uploads FILE into the server's store and publishes it as the new target of the track KEY
(name or name/os/arch) with the version label V.

  --track KEY       the track to publish (created if it does not exist)
  --version V       the version told to devices
  --rollout JSON    roll it out in stages: the rollout object of POST /admin/artifacts,
                    e.g. '{"steps":[1,10,50,100],"step_interval":"1h"}'
  --server URL      the admin API (default: $UPDATER_SERVER, else http://127.0.0.1:8080)

The admin token (the publish role suffices) is read from the environment variable
UPDATER_TOKEN, never from the command line. The file is hashed locally and sent with its hash;
a progress bar is drawn on stderr when it is a terminal. On success the published track is
printed on stdout as JSON and the exit status is 0; a refusal prints the server's error and
exits 1; a usage error exits 2.
`;

const DEFAULT_SERVER = 'http://127.0.0.1:8080';

class UsageError extends Error {}

export async function pushCommand(args: string[]): Promise<number> {
  let plan: Push;
  try {
    plan = parsePush(args, process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`updater push: ${err.message}\n\n${PUSH_HELP}`);
    return 2;
  }
  try {
    const track = await push(plan, progressBar(process.stderr));
    process.stdout.write(`${JSON.stringify(track)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`updater push: ${(err as Error).message}\n`);
    return 1;
  }
}

export interface Push {
  file: string;
  server: URL;
  token: string;
  track: { name: string; os: string; arch: string };
  version: string;
  rollout?: unknown;
}

export function parsePush(args: string[], env: NodeJS.ProcessEnv): Push {
  let parsed;
  try {
    parsed = parseArgs({
      args, allowPositionals: true, strict: true,
      options: { track: { type: 'string' }, version: { type: 'string' }, rollout: { type: 'string' }, server: { type: 'string' } },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError('exactly one FILE is required');
  if (!values.track) throw new UsageError('--track KEY is required');
  if (!values.version) throw new UsageError('--version V is required');
  // Refused here as the server would refuse it, before the file is uploaded.
  const versionProblem = versionLabelProblem(values.version);
  if (versionProblem) throw new UsageError(`--version ${versionProblem}`);
  const token = env.UPDATER_TOKEN?.trim();
  if (!token) throw new UsageError('UPDATER_TOKEN must hold the admin token');
  let track;
  try {
    track = parseTrackKey(values.track);
  } catch (err) {
    throw new UsageError(`--track: ${(err as Error).message}`);
  }
  let rollout: unknown;
  if (values.rollout !== undefined) {
    try {
      rollout = JSON.parse(values.rollout);
      parseRolloutPlan(rollout); // checked here too, so a typo fails before gigabytes are sent
    } catch (err) {
      throw new UsageError(`--rollout: ${(err as Error).message}`);
    }
  }
  let server: URL;
  try {
    server = new URL(values.server ?? env.UPDATER_SERVER ?? DEFAULT_SERVER);
  } catch {
    throw new UsageError('--server must be a URL like https://updates.example.com');
  }
  if (server.protocol !== 'http:' && server.protocol !== 'https:') throw new UsageError('--server must be an http:// or https:// URL');
  return { file: positionals[0]!, server, token, track, version: values.version, ...(rollout !== undefined ? { rollout } : {}) };
}

export type Progress = (phase: 'hashing' | 'uploading', done: number, total: number) => void;

/** Hashes, uploads and publishes; resolves with the published track as the server answers it. */
export async function push(plan: Push, progress: Progress): Promise<unknown> {
  const info = await stat(plan.file).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`cannot read ${plan.file}: ${err.code ?? err.message}`);
  });
  if (!info.isFile()) throw new Error(`${plan.file} is not a regular file`);
  const hash = await hashFile(plan.file, info.size, progress);
  const uploaded = await uploadFile(plan, info.size, hash, progress) as { hash: string; size: number };
  if (uploaded.hash !== hash) throw new Error(`the server stored ${uploaded.hash}, not ${hash}`);
  const body = JSON.stringify({ ...plan.track, version: plan.version, hash, ...(plan.rollout !== undefined ? { rollout: plan.rollout } : {}) });
  const answer = await call(plan, 'POST', '/admin/artifacts', { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }, (req) => req.end(body));
  return answer;
}

async function hashFile(path: string, size: number, progress: Progress): Promise<string> {
  const hasher = createHash('sha256');
  let done = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hasher.update(chunk as Buffer);
    done += (chunk as Buffer).length;
    progress('hashing', done, size);
  }
  if (done !== size) throw new Error(`${path} changed size while it was hashed`);
  return hasher.digest('hex');
}

/**
 * The server's HTTP parser (uWebSockets.js) closes the connection on a Content-Length of ten
 * digits or more, so a file of 1e9 bytes and up goes chunked; smaller ones announce their size,
 * which lets the server refuse one over admin.max_upload_mb before a byte is sent.
 */
const LARGEST_CONTENT_LENGTH = 999_999_999;

/** The headers of the upload of a file of `size` bytes hashing to `hash`. */
export function uploadHeaders(size: number, hash: string): Record<string, string> {
  const length: Record<string, string> = size <= LARGEST_CONTENT_LENGTH ? { 'content-length': String(size) } : { 'transfer-encoding': 'chunked' };
  return { 'content-type': 'application/octet-stream', ...length, 'x-content-sha256': hash };
}

function uploadFile(plan: Push, size: number, hash: string, progress: Progress): Promise<unknown> {
  return call(plan, 'PUT', '/admin/binaries', uploadHeaders(size, hash), (req) => {
    let sent = 0;
    const source = createReadStream(plan.file, { highWaterMark: 1 << 20 });
    source.on('data', (chunk) => {
      sent += (chunk as Buffer).length;
      progress('uploading', sent, size);
    });
    source.on('error', (err) => req.destroy(err));
    source.pipe(req);
  });
}

/** One admin request; resolves with the JSON answer of a 2xx, rejects with the server's error otherwise. */
function call(plan: Push, method: string, path: string, headers: Record<string, string>, send: (req: import('node:http').ClientRequest) => void): Promise<unknown> {
  const url = new URL(path, plan.server);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { ...headers, authorization: `Bearer ${plan.token}` } }, (res: IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        let json: any;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve(json);
        else reject(new Error(`${method} ${path} answered ${status}${json?.error ? ` ${json.error.code}: ${json.error.message}` : ''}`));
      });
    });
    // An early answer (413, 507) closes the connection while the body is still going out: the
    // answer is what matters, and it arrives through the response handler when it can.
    req.on('error', (err) => reject(new Error(`${method} ${url.origin}${path}: ${(err as NodeJS.ErrnoException).code ?? err.message}`)));
    send(req);
  });
}

/** A bar redrawn in place at most ten times a second, on a terminal only (a CI log gets none). */
export function progressBar(out: NodeJS.WriteStream): Progress {
  if (!out.isTTY) return () => undefined;
  let last = 0;
  return (phase, done, total) => {
    const now = Date.now();
    if (done < total && now - last < 100) return;
    last = now;
    const width = 30;
    const share = total === 0 ? 1 : done / total;
    const filled = Math.round(share * width);
    out.write(`\r${phase.padEnd(9)} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${(share * 100).toFixed(0).padStart(3)}% ${mib(done)}/${mib(total)} MiB`);
    if (done >= total) out.write('\n');
  };
}

function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}

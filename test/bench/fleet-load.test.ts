import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'coap-packet';
import t from 'tap';
import { coapHeartbeatTemplate, cycleCoapDevices, deviceId, histogramQuantile, sumMetric, writeCyclingScript } from '../../bench/fleet-load.js';
import { runWrk } from '../../bench/wrk.js';
import { heartbeatFields } from '../../src/shared/wire/cbor.js';
import { validateHeartbeat } from '../../src/shared/wire/validate.js';
import { needs } from '../helpers/system-tools.js';

const hash = 'c'.repeat(64);

/** A server that records every heartbeat's device id (and its Authorization header). */
async function recorder(t: { teardown(fn: () => unknown): void }): Promise<{ url: string; seen: { id: string; auth: string | undefined }[] }> {
  const seen: { id: string; auth: string | undefined }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ id: validateHeartbeat(JSON.parse(body)).deviceId, auth: req.headers.authorization });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/heartbeat`, seen };
}

/** A directory of the test's own, removed at its end. */
async function scratchDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'fleet-load-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A tokens file of three devices' tokens in `dir`: tok-a, tok-b, tok-c, the fleet's first device first. */
async function threeTokens(dir: string): Promise<string> {
  const tokens = join(dir, 'tokens.txt');
  await writeFile(tokens, 'tok-a\ntok-b\ntok-c\n');
  return tokens;
}

t.test('the wrk script sends valid heartbeats from the devices in turn, wrapping after the last', needs('wrk'), async (t) => {
  const dir = await scratchDir(t);
  const { url, seen } = await recorder(t);
  const script = await writeCyclingScript(dir, 'cycle', { versionHash: hash }, 5);
  const result = await runWrk({ url, script, threads: 1, connections: 1, seconds: 1 });
  t.equal(result.errors, 0);
  t.ok(seen.length > 10, `${seen.length} heartbeats`);
  // wrk builds one request at start-up that it never sends: the first one seen may be device 1.
  const first = Number(seen[0]!.id.slice(-1));
  t.same(seen.slice(0, 7).map((s) => s.id), [0, 1, 2, 3, 4, 5, 6].map((i) => deviceId((first + i) % 5)), 'the next device each time, device 0 after device 4');
  t.equal(seen[0]!.auth, undefined, 'no token without a tokens file');
});

t.test('with a tokens file every heartbeat carries its own device\'s token', needs('wrk'), async (t) => {
  const dir = await scratchDir(t);
  const { url, seen } = await recorder(t);
  const tokens = await threeTokens(dir);
  const script = await writeCyclingScript(dir, 'cycle', { versionHash: hash }, 3, { tokensFile: tokens });
  await runWrk({ url, script, threads: 1, connections: 1, seconds: 1 });
  t.ok(seen.length > 3);
  for (const s of seen) t.equal(s.auth, `Bearer tok-${'abc'[Number(s.id.slice(-1))]}`, `${s.id} with its token`);
});

t.test('a fleet with an id offset sends its own ids, each with its line of the tokens file', needs('wrk'), async (t) => {
  const dir = await scratchDir(t);
  const { url, seen } = await recorder(t);
  const tokens = await threeTokens(dir);
  const script = await writeCyclingScript(dir, 'cycle', { versionHash: hash }, 3, { tokensFile: tokens, idOffset: 200 });
  await runWrk({ url, script, threads: 1, connections: 1, seconds: 1 });
  t.ok(seen.length > 3);
  t.same([...new Set(seen.map((s) => s.id))].sort(), [deviceId(200), deviceId(201), deviceId(202)], 'only the fleet\'s own three ids');
  for (const s of seen) t.equal(s.auth, `Bearer tok-${'abc'[Number(s.id.slice(-1))]}`, `${s.id} with its token`);
});

t.test('a fleet whose ids would pass six digits is refused before wrk starts', async (t) => {
  const dir = await scratchDir(t);
  await t.rejects(writeCyclingScript(dir, 'too-many', { versionHash: hash }, 10, { idOffset: 999_995 }), RangeError, 'ids past the six digits are refused');
});

t.test('the CoAP template\'s device id is rewritten in place for each request', async (t) => {
  const template = coapHeartbeatTemplate({ versionHash: hash });
  const vary = cycleCoapDevices(template, 1000);
  const datagram = Buffer.from(template);
  vary(datagram, 1234);
  t.equal(datagram.length, template.length);
  t.equal(validateHeartbeat(heartbeatFields(parse(datagram).payload)).deviceId, deviceId(234), 'the n-th request comes from device n modulo the fleet');
});

t.test('metrics are read from the exposition text', async (t) => {
  const text = [
    'updater_fleet_dropped_updates_total{reason="last_seen"} 2', 'updater_fleet_dropped_updates_total{reason="new_device"} 3',
    'updater_fleet_flush_lag_seconds_bucket{le="0.5"} 90', 'updater_fleet_flush_lag_seconds_bucket{le="1"} 98',
    'updater_fleet_flush_lag_seconds_bucket{le="2"} 100', 'updater_fleet_flush_lag_seconds_bucket{le="+Inf"} 100',
  ].join('\n');
  t.equal(sumMetric(text, 'updater_fleet_dropped_updates_total'), 5);
  t.equal(histogramQuantile(text, 'updater_fleet_flush_lag_seconds', 0.99), 2, 'the upper bound of the bucket holding the 99th percentile');
  t.equal(histogramQuantile(text, 'updater_fleet_flush_lag_seconds', 0.9), 0.5);
});

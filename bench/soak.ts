import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { runLoad } from '../agent/load/run.js';
import { readServerRss } from '../agent/load/rss.js';
import { writePrivateKeyFile } from '../src/shared/signing.js';
import { freePort } from '../test/helpers/fixture.js';

// The soak of issue 6: 10,000 simulated devices (30 % over CoAP) over 50 tracks with 5
// superseded versions each, for a bounded time, against the server in its own process. RSS is sampled every
// second; it must stay under the bound that docs/memory.md's formula gives for this
// configuration, computed from the idle RSS measured in the same run, and must not trend up.

const TRACKS = 50;
const VERSIONS = 6; // the current target and 5 superseded ones
const BINARY_BYTES = 64 * 1024;
const DEVICES = 10_000;
const RATE = Number(process.env.SOAK_RATE ?? 2000);
const SECONDS = Number(process.env.SOAK_SECONDS ?? 120);
const MB = 1024 * 1024;
/** Share of the fleet on CoAP; the rest heartbeats over HTTP. */
const COAP_SHARE = 0.3;
const BUDGETS = { target_cache_mb: 32, hot_delta_cache_mb: 32, delta_concurrency: 2, cache_size: 5000 };
/** A diff thread's own isolate, before any input (measured: 30-40 MB). */
const DIFF_THREAD_BASELINE_MB = 48;
const ALLOWED_SLOPE_MB_PER_MIN = 4;

const repoRoot = resolve(fileURLToPath(import.meta.url), '..', '..', '..');

export async function runSoakBench(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'updater-soak-'));
  const token = randomBytes(24).toString('hex');
  const port = await freePort();
  const coapPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  await writePrivateKeyFile(join(dir, 'signing.key'));
  await writeFile(join(dir, 'admin.token'), token);
  await writeFile(join(dir, 'updater.yaml'), stringify({
    listen: { http: `127.0.0.1:${port}`, coap: `127.0.0.1:${coapPort}` },
    signing: { private_key_file: './signing.key' },
    admin: { token_file: './admin.token' },
    store: { dir: './store', state_file: './state.json', target_cache_mb: BUDGETS.target_cache_mb, hot_delta_cache_mb: BUDGETS.hot_delta_cache_mb, delta_concurrency: BUDGETS.delta_concurrency, full_compression_level: 3 },
    manifest: { cache_size: BUDGETS.cache_size, retry_after: '2s' },
    allow_full_download: true,
    log_level: 'warn',
    retention: { history_depth: VERSIONS - 1 },
  }));
  const server = spawn(process.execPath, [join(repoRoot, 'bin', 'updater.js'), 'serve', '--config', join(dir, 'updater.yaml')], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitFor(async () => (await fetch(`${url}/health`).catch(() => undefined))?.ok === true, 60_000);
    console.log(`  publishing ${TRACKS} tracks × ${VERSIONS} versions …`);
    for (let track = 0; track < TRACKS; track++) {
      for (let version = 1; version <= VERSIONS; version++) {
        const binary = join(dir, `t${track}-v${version}.bin`);
        await writeFile(binary, pseudoFirmware(BINARY_BYTES, `t${track}`, version));
        const answer = await fetch(`${url}/admin/artifacts`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `app${track}`, version: `${version}.0.0`, binary }),
        });
        if (!answer.ok) throw new Error(`publish answered ${answer.status}: ${await answer.text()}`);
      }
    }
    await new Promise((r) => setTimeout(r, 3000));
    const idle = (await readServerRss(url)) ?? 0;
    const boundBytes = idle + (BUDGETS.target_cache_mb + BUDGETS.hot_delta_cache_mb) * MB + BUDGETS.cache_size * 500
      + BUDGETS.delta_concurrency * (DIFF_THREAD_BASELINE_MB * MB + 21 * BINARY_BYTES);
    console.log(`  idle RSS ${(idle / MB).toFixed(1)} MB; bound ${(boundBytes / MB).toFixed(1)} MB; ${DEVICES} devices at ${RATE}/s for ${SECONDS} s`);
    const report = await runLoad({
      url,
      devices: DEVICES,
      rate: RATE,
      durationMs: SECONDS * 1000,
      oldShare: 0.3,
      failRate: 0,
      coapUrl: `coap://127.0.0.1:${coapPort}`,
      coapShare: COAP_SHARE,
      sockets: 64,
      maxInflight: 1024,
      download: true,
      adminToken: token,
      soak: { boundBytes, maxSlopeBytesPerMinute: ALLOWED_SLOPE_MB_PER_MIN * MB },
      progress: (line) => console.log(`  ${line}`),
    });
    const soak = report.soak!;
    return {
      devices: report.devices,
      tracks: report.tracks,
      seconds: Number(report.seconds.toFixed(1)),
      requests_per_second: Math.round(report.requests_per_second),
      heartbeats_by_transport: report.transports,
      latency_ms: report.latency_ms,
      downloads: report.downloads,
      updates_applied: report.updates_applied,
      errors: report.errors,
      rss_mb: report.rss_mb,
      idle_rss_mb: Number((idle / MB).toFixed(1)),
      bound_mb: Number((boundBytes / MB).toFixed(1)),
      soak: soak.ok ? 'PASS' : `FAIL: ${soak.reasons.join('; ')}`,
      ratios: [
        { name: 'soak peak RSS / documented bound', value: soak.peakBytes / boundBytes, goal: { max: 1 } },
        { name: 'soak RSS floor growth after warm-up, MB/min', value: soak.slopeBytesPerMinute / MB, goal: { max: ALLOWED_SLOPE_MB_PER_MIN } },
      ],
    };
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  }
}

/** Versions of one track share most bytes, so deltas are small as in real rebuilds. */
function pseudoFirmware(size: number, seed: string, version: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let block = createHash('sha256').update(seed).digest();
  for (let offset = 0; offset < size; offset += 32) {
    block = createHash('sha256').update(block).digest();
    block.copy(out, offset, 0, Math.min(32, size - offset));
  }
  for (let v = 1; v <= version; v++) createHash('sha256').update(`${seed}-${v}`).digest().copy(out, (v * 4099) % (size - 32));
  return out;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('the server did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
}

import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import type { DeltaEngine } from '../../src/shared/config/types.js';
import { writePrivateKeyFile } from '../../src/shared/signing.js';
import { freePort, noise } from '../../test/helpers/fixture.js';

// The soak's server: its own process on the server cores, with budgets small enough that the
// soak's traffic fills every one of them, and tracks whose binaries together pass the caches.

export interface SoakShape {
  readonly tracks: number;
  /** Versions published per track at start: the current target and its superseded ones. */
  readonly versions: number;
  readonly binaryBytes: number;
  readonly targetCacheMb: number;
  readonly hotCacheMb: number;
  readonly manifestCacheSize: number;
  readonly coapDedupBytes: number;
  readonly deltaConcurrency: number;
  readonly fleetBufferMb: number;
  /** Devices written into the fleet database once the server's idle RSS is measured (inventory.ts); 0 for none. */
  readonly seededDevices: number;
  /**
   * `store.delta_engine`. The native engine (the default) serves both patch formats, so the hot
   * cache holds both; only bsdiff-node generations read the target cache (store.target_cache_mb),
   * so only a soak on it fills and judges that budget.
   */
  readonly deltaEngine: DeltaEngine;
}

/** The `rollout` object of a publish, as the admin API takes it. */
export interface RolloutRequest {
  readonly steps: readonly number[];
  readonly step_interval: string;
  readonly max_failure_rate: number;
  readonly min_reports: number;
}

export interface SoakServer {
  readonly url: string;
  readonly coapUrl: string;
  readonly token: string;
  /** The fleet database's file (SQLite, under the store). */
  readonly database: string;
  readonly process: ChildProcess;
  /** Publishes the next version of track `track` (a new delta source for its devices). */
  /** Publishes a version; with `rollout`, as a staged rollout (docs/rollouts.md). */
  publish(track: number, version: number, rollout?: RolloutRequest): Promise<void>;
  stop(): Promise<void>;
}

const repoRoot = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..');

/**
 * The soak's server with `devices.auth: on` (SOAK_DEVICE_AUTH=on): only preauthorized devices
 * get a token, so the only devices in the inventory are the ones the load processes added.
 */
export const SOAK_DEVICE_AUTH_CONFIG = { auth: 'on', enrollment: 'preauthorized' } as const;

export async function startSoakServer(dir: string, shape: SoakShape, command: (cmd: string, args: string[]) => [string, string[]], env: NodeJS.ProcessEnv, deviceAuth = false): Promise<SoakServer> {
  const token = randomBytes(24).toString('hex');
  const port = await freePort();
  const coapPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const binaries = join(dir, 'binaries');
  await mkdir(binaries);
  await writePrivateKeyFile(join(dir, 'signing.key'));
  await writeFile(join(dir, 'admin.token'), token);
  await writeFile(join(dir, 'updater.yaml'), stringify({
    listen: { http: `127.0.0.1:${port}`, coap: `127.0.0.1:${coapPort}` },
    signing: { private_key_file: './signing.key' },
    admin: { token_file: './admin.token' },
    store: {
      dir: './store', state_file: './state.json', target_cache_mb: shape.targetCacheMb, hot_delta_cache_mb: shape.hotCacheMb,
      delta_concurrency: shape.deltaConcurrency,
      delta_engine: shape.deltaEngine,
      // Full files for re-imaged devices are compressed as they are asked for; level 3 keeps
      // those generations quick (the default level is 19).
      full_compression_level: 3,
      publish_roots: [binaries],
    },
    manifest: { cache_size: shape.manifestCacheSize, retry_after: '2s' },
    coap: { dedup_cache_bytes: shape.coapDedupBytes },
    fleet: { buffer_mb: shape.fleetBufferMb },
    allow_full_download: true,
    log_level: 'warn',
    retention: { history_depth: shape.versions - 1 },
    ...(deviceAuth ? { devices: SOAK_DEVICE_AUTH_CONFIG } : {}),
  }));
  const database = join(dir, 'store', 'updater.db');
  const [cmd, args] = command(process.execPath, [join(repoRoot, 'bin', 'updater.js'), 'serve', '--config', join(dir, 'updater.yaml')]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'], env });
  const exited = new Promise((r) => child.once('exit', r));
  const publish = async (track: number, version: number, rollout?: RolloutRequest) => {
    const binary = join(binaries, `t${track}-v${version}.bin`);
    await writeFile(binary, pseudoFirmware(shape.binaryBytes, `t${track}`, version));
    const answer = await fetch(`${url}/admin/artifacts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `app${track}`, version: `${version}.0.0`, binary, ...(rollout ? { rollout } : {}) }),
    });
    if (!answer.ok) throw new Error(`publish answered ${answer.status}: ${await answer.text()}`);
  };
  const server: SoakServer = {
    url,
    coapUrl: `coap://127.0.0.1:${coapPort}`,
    token,
    database,
    process: child,
    publish,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  try {
    await waitFor(async () => (await fetch(`${url}/health`).catch(() => undefined))?.ok === true, 120_000, () => child.exitCode !== null);
    for (let track = 0; track < shape.tracks; track++) for (let version = 1; version <= shape.versions; version++) await publish(track, version);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

/**
 * Versions of one track share most bytes, so deltas are small as in real rebuilds. The bytes
 * are an AES-CTR keystream keyed by the track: as random as a hash chain, at a small fraction
 * of its CPU (a SHA-256 call per 32 bytes cost the quick soak's test 2 s per soak).
 */
function pseudoFirmware(size: number, seed: string, version: number): Buffer {
  const out = noise(size, seed);
  for (let v = 1; v <= version; v++) createHash('sha256').update(`${seed}-${v}`).digest().copy(out, (v * 4099) % (size - 32));
  return out;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, gaveUp: () => boolean): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (gaveUp()) throw new Error('the server exited before it answered /health');
    if (Date.now() - started > timeoutMs) throw new Error('the server did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
}

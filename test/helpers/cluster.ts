import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from './databases.js';
import { freePort, makeFixture, type Fixture } from './fixture.js';
import { configDocument, spawnServer, writeConfig, type ArtifactEntry, type ServerProcess } from './server.js';
import { toolPath } from './system-tool-list.js';

// A cluster on loopback for tests (docs/scaling.md): a PostgreSQL database of its own (behind
// a TCP relay the test can cut, to play a lost database), N `updater serve` processes sharing
// one store directory, and Debian's nginx in front of them, run as a child process of the test
// with its own prefix and a free port. Everything is ended by PID when the test ends.

export const NGINX = toolPath('nginx') ?? '/usr/sbin/nginx';

/** What ends the processes: a tap test, or the cluster bench's own list. */
export interface Owner {
  teardown(fn: () => Promise<void> | void): void;
}

export interface Replica {
  readonly index: number;
  readonly url: string;
  readonly port: number;
  readonly configPath: string;
  /** The replica's CoAP port, when the cluster was started with `coap`. */
  readonly coapPort?: number;
  process: ServerProcess;
}

export interface Cluster {
  readonly fixture: Fixture;
  /** The database's name on the test server (for pg_stat_database). */
  readonly databaseName: string;
  readonly replicas: Replica[];
  readonly relay: DatabaseRelay;
  /** Kills a replica with SIGKILL and waits for it to be gone. */
  kill(replica: Replica): Promise<void>;
  /** Starts a killed replica again with its configuration. */
  restart(replica: Replica): Promise<void>;
}

/** A fixture and a fresh PostgreSQL database behind a relay the test can cut; all gone when the test ends. */
export async function relayedDatabase(t: Owner, prefix: string): Promise<{ fixture: Fixture; database: TestDatabase; relay: DatabaseRelay }> {
  const fixture = await makeFixture(prefix);
  const database = await createTestDatabase('postgres', fixture.dir);
  const relay = await startDatabaseRelay(new URL(database.location));
  t.teardown(async () => {
    await relay.close();
    await database.drop();
    await fixture.cleanup();
  });
  return { fixture, database, relay };
}

/** Starts a cluster of `count` replicas (each with a CoAP listener of its own with `coap`); torn down with the test. */
export async function startCluster(
  t: Owner, count: number, artifacts: ArtifactEntry[] = [], overrides: Record<string, unknown> = {}, options: { coap?: boolean } = {},
): Promise<Cluster> {
  const { fixture, database, relay } = await relayedDatabase(t, 'updater-cluster-');
  const replicas: Replica[] = [];
  t.teardown(async () => {
    for (const r of replicas) await stopProcess(r.process.child, r.process.exited);
  });
  const storeDir = join(fixture.dir, 'shared-store');
  for (let index = 0; index < count; index++) {
    const port = await freePort();
    const coapPort = options.coap ? await freePort() : undefined;
    const doc = configDocument(fixture, port, artifacts, {
      store: { dir: storeDir, delta_concurrency: 2, publish_roots: [fixture.dir] },
      database: relay.url,
      log_level: 'info',
      ...overrides,
      ...(coapPort ? { listen: { ...(overrides.listen as Record<string, unknown> | undefined), coap: `127.0.0.1:${coapPort}` } } : {}),
    });
    const configPath = await writeConfig(fixture, doc, `replica-${index}.yaml`);
    const url = `http://127.0.0.1:${port}`;
    // One after another: the first start migrates the schema and republishes configured tracks.
    const process = await spawnServer(configPath, url, 120_000);
    replicas.push({ index, url, port, configPath, ...(coapPort ? { coapPort } : {}), process });
  }
  return {
    fixture,
    databaseName: new URL(database.location).pathname.slice(1),
    replicas,
    relay,
    async kill(replica) {
      replica.process.child.kill('SIGKILL');
      await replica.process.exited;
    },
    async restart(replica) {
      replica.process = await spawnServer(replica.configPath, replica.url, 120_000);
    },
  };
}

async function stopProcess(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

export interface DatabaseRelay {
  /** The database URL with the relay's port in it. */
  readonly url: string;
  /** Drops every connection and refuses new ones: the database is gone for the replicas. */
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP relay in front of the test database. Cutting it is how the tests lose the database:
 * the machine's PostgreSQL is shared with other tests and is never stopped.
 */
export async function startDatabaseRelay(target: URL): Promise<DatabaseRelay> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = () => new Promise<void>((resolve, reject) => {
    server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const stop = () => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy();
    if (!server) return resolve();
    server.close(() => resolve());
    server = undefined;
  });
  await listen();
  const url = new URL(target.toString());
  url.port = String(port);
  return { url: url.toString(), cut: stop, restore: listen, close: stop };
}

export interface Nginx {
  readonly url: string;
  /** Lines of the access log: `msec status upstream_addr request_time "request"`. */
  accessLog(): Promise<string[]>;
  /** Lines of the error log (level warn and up): why nginx failed a request. */
  errorLog(): Promise<string[]>;
  stop(): Promise<void>;
}

/** Debian's nginx as a load balancer in front of `upstreams` (HTTP), with its own prefix. */
export async function startNginx(t: Owner, dir: string, upstreams: readonly number[]): Promise<Nginx> {
  const prefix = join(dir, `nginx-${Date.now()}`);
  await mkdir(join(prefix, 'logs'), { recursive: true });
  const port = await freePort();
  const conf = join(prefix, 'nginx.conf');
  await writeFile(conf, nginxConfig(prefix, port, upstreams));
  const child = spawn(NGINX, ['-p', prefix, '-c', conf, '-e', join(prefix, 'logs', 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = () => stopProcess(child, exited);
  t.teardown(stop);
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx did not start: ${output}`);
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break;
    if (Date.now() - started > 30_000) throw new Error(`nginx did not answer within 30 s: ${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    accessLog: async () => (await readFile(join(prefix, 'logs', 'access.log'), 'utf8')).split('\n').filter(Boolean),
    errorLog: async () => (await readFile(join(prefix, 'logs', 'error.log'), 'utf8')).split('\n').filter(Boolean),
    stop,
  };
}

/** The HTTP part of deploy/nginx.conf, with a test's ports and paths. */
function nginxConfig(prefix: string, port: number, upstreams: readonly number[]): string {
  return `
daemon off;
master_process on;
worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'logs', 'error.log')} warn;
events { worker_connections 4096; }
http {
  client_body_temp_path ${join(prefix, 'client_body')};
  proxy_temp_path ${join(prefix, 'proxy')};
  fastcgi_temp_path ${join(prefix, 'fastcgi')};
  uwsgi_temp_path ${join(prefix, 'uwsgi')};
  scgi_temp_path ${join(prefix, 'scgi')};
  log_format cluster '$msec $status $upstream_addr $request_time "$request"';
  access_log ${join(prefix, 'logs', 'access.log')} cluster;
  upstream updater {
${upstreams.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=5s;`).join('\n')}
    keepalive 32;
    keepalive_timeout 5s;
  }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 1m;
    location / {
      proxy_pass http://updater;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_next_upstream error timeout http_502 http_503;
      proxy_connect_timeout 2s;
      proxy_buffering off;
    }
  }
}
`;
}

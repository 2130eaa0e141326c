import { spawn, spawnSync } from 'node:child_process';
import t from 'tap';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { childEnv, nodeChild } from '../helpers/node-options.js';
import { configDocument, REPO_ROOT, UPDATER_BIN, writeConfig } from '../helpers/server.js';
import { needs, toolPath } from '../helpers/system-tools.js';

// Logs are for whoever reads stdout: a person at a terminal (or one who asks with --pretty)
// gets lines to read, a file, a pipe or journald gets JSON lines.

const LOGGER = `${REPO_ROOT}/dist/src/shared/logger.js`;
const PROBE = `import(${JSON.stringify(LOGGER)}).then((m) => m.createLogger('probe', 'info').info({ n: 1, token: 'secret' }, 'hello'))`;
// An ANSI colour sequence: ESC [ digits m.
const COLOR = new RegExp(`${String.fromCharCode(27)}\\[\\d+m`, 'g');

function probe(env: NodeJS.ProcessEnv): string {
  const node = nodeChild(['-e', PROBE], env);
  return spawnSync(node.command, node.args, { env: node.env, encoding: 'utf8' }).stdout;
}

/** The probe on a pseudo-terminal made by util-linux's script(1). */
function probeOnTerminal(env: NodeJS.ProcessEnv): string {
  const command = `${process.execPath} -e ${JSON.stringify(PROBE).replace(/\$/g, '\\$')}`;
  return spawnSync(toolPath('script')!, ['-qec', command, '/dev/null'], { env: childEnv(env), encoding: 'utf8' }).stdout;
}

t.test('to a pipe the logger writes one JSON line, the token redacted', async (t) => {
  const line = JSON.parse(probe({}).trim()) as Record<string, unknown>;
  t.match(line, { level: 30, component: 'probe', n: 1, token: '[redacted]', msg: 'hello' });
});

t.test('UPDATER_LOG_PRETTY=1 (what --pretty sets) writes a line a person reads, without colours in a pipe', async (t) => {
  const out = probe({ UPDATER_LOG_PRETTY: '1' });
  t.match(out, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: probe: hello \{"n":1,"token":"\[redacted\]"\}\n$/);
  t.notMatch(out, COLOR);
});

t.test('on a terminal the lines are for a person, in colour; UPDATER_LOG_PRETTY=0 keeps JSON', needs('script'), async (t) => {
  const out = probeOnTerminal({});
  t.match(out, COLOR, 'coloured');
  t.match(out.replace(COLOR, ''), /INFO: probe: hello/);
  t.notMatch(out, /"level":30/);
  const json = probeOnTerminal({ UPDATER_LOG_PRETTY: '0' });
  t.match(JSON.parse(json.trim()), { component: 'probe', msg: 'hello' });
});

t.test('updater serve --pretty: the supervisor and every actor thread write readable lines', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const port = await freePort();
  const v1 = await fixture.writeBinary('v1.bin', firmware(10_000, 'pretty'));
  const configPath = await writeConfig(fixture, configDocument(fixture, port, [{ name: 'app', version: '1', binary: v1.path }], { log_level: 'info' }));
  const node = nodeChild([UPDATER_BIN, 'serve', '--pretty', '--config', configPath]);
  const child = spawn(node.command, node.args, { stdio: ['ignore', 'pipe', 'pipe'], env: node.env });
  let text = '';
  child.stdout.on('data', (d) => (text += d));
  child.stderr.on('data', (d) => (text += d));
  // 'close': the output is read to its end (spawnServer's `exited`).
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  const deadline = Date.now() + 60_000;
  while (!text.includes('supervisor: server started') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGTERM');
  const code = await exited;
  t.equal(code, 0, `SIGTERM drains it and it exits 0${code === 0 ? '' : `:\n${text}`}`);
  t.match(text, /INFO: http: http listening/, 'an actor thread writes the same way');
  t.match(text, /INFO: supervisor: draining/);
  t.notMatch(text, /^\{/m, 'no JSON line');
});

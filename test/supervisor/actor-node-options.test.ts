import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { loadConfigFile } from '../../src/shared/config/load.js';
import { startServer, type ServerOptions } from '../../src/supervisor/index.js';
import { firmware, freePort, makeFixture } from '../helpers/fixture.js';
import { ACTOR_NODE_OPTIONS } from '../helpers/node-options.js';
import { configDocument, writeConfig } from '../helpers/server.js';

// A process that embeds the server can keep its own Node options from the actor threads
// (ServerOptions.actorNodeOptions). The test runner's loader hooks are such options: run again
// in every actor thread, they made an in-process test server's start cost three times the CPU.
// A new thread reads the NODE_OPTIONS of its environment as well as its arguments, so the
// options must be kept out of both. The hook here stands in for the runner's: a module that
// leaves a file behind in each thread it runs in.

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const marks = join(fixture.dir, 'marks');
await mkdir(marks);
const hook = join(fixture.dir, 'hook.mjs');
await writeFile(hook, `import { writeFileSync } from 'node:fs';
import { threadId } from 'node:worker_threads';
writeFileSync(${JSON.stringify(marks)} + '/thread-' + threadId, '');
`);
const v1 = await fixture.writeBinary('v1.bin', firmware(10_000, 'node-options'));

/** The threads the hook ran in while a server started and stopped with `options`. */
async function hookedThreads(options: ServerOptions): Promise<string[]> {
  const before = new Set(await readdir(marks));
  const doc = configDocument(fixture, await freePort(), [{ name: 'app', version: '1', binary: v1.path }]);
  const supervisor = await startServer(loadConfigFile(await writeConfig(fixture, doc)), options);
  await supervisor.stop();
  return (await readdir(marks)).filter((name) => !before.has(name));
}

const ownNodeOptions = process.env.NODE_OPTIONS;
// Read by each worker as it starts, as tap's own --import is.
process.env.NODE_OPTIONS = `${ownNodeOptions ?? ''} --import=${pathToFileURL(hook).href}`;
t.teardown(() => {
  if (ownNodeOptions === undefined) delete process.env.NODE_OPTIONS;
  else process.env.NODE_OPTIONS = ownNodeOptions;
});

t.test("the actor threads run without the options the embedding process leaves out", async (t) => {
  // ACTOR_NODE_OPTIONS was read before this file added its hook: it has neither tap's nor this one.
  t.same(await hookedThreads({ actorNodeOptions: ACTOR_NODE_OPTIONS }), [], 'no actor thread ran the hook');
});

t.test('the hook runs in every actor thread whose NODE_OPTIONS names it', async (t) => {
  // So the test above would see a thread that read NODE_OPTIONS, as a thread given only
  // execArgv does: its NODE_OPTIONS are the process's.
  const threads = await hookedThreads({ actorNodeOptions: { ...ACTOR_NODE_OPTIONS, nodeOptions: process.env.NODE_OPTIONS! } });
  t.ok(threads.length >= 5, `the hook ran in ${threads.length} threads: ${threads.join(', ')}`);
});

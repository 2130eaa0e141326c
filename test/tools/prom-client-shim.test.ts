import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../helpers/server.js';

// tools/bundle/prom-client.cjs, which the actor bundles import as prom-client (tools/build.js):
// the index's exports, the very same values, without loading what the actors never use.

const SHIM = join(REPO_ROOT, 'tools', 'bundle', 'prom-client.cjs');
const require = createRequire(join(REPO_ROOT, 'package.json'));
/** Node's modules that prom-client's Pushgateway brings in. */
const UNUSED_BY_ACTORS = ['http', 'https', 'tls', 'zlib'];

t.test("the shim has the index's exports, each the same value", async (t) => {
  const index = require('prom-client') as Record<string, unknown>;
  const shim = require(SHIM) as Record<string, unknown>;
  t.same(Object.keys(shim), Object.keys(index), 'the same names, in the same order');
  for (const name of Object.keys(index)) t.equal(shim[name], index[name], name);
});

/** Node's own modules loaded once `script` has run in a fresh process, among UNUSED_BY_ACTORS. */
function loadedAfter(script: string): string[] {
  const probe = `${script}\nconst loaded = new Set(process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)));\nprocess.stdout.write(JSON.stringify(${JSON.stringify(UNUSED_BY_ACTORS)}.filter((m) => loaded.has(m))));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', probe], { cwd: REPO_ROOT, env: { ...process.env, NODE_OPTIONS: '' } }).toString()) as string[];
}

t.test('counting through the shim loads none of the modules the index loads for the Pushgateway', async (t) => {
  const count = (from: string) => `const p = require(${JSON.stringify(from)});
const registry = new p.Registry();
new p.Counter({ name: 'c', help: 'c', registers: [registry] }).inc();
new p.Gauge({ name: 'g', help: 'g', registers: [registry] }).set(1);
new p.Histogram({ name: 'h', help: 'h', registers: [registry] }).observe(1);
registry.getMetricsAsJSON().then((m) => { if (m.length !== 3) throw new Error('metrics missing'); });`;
  t.same(loadedAfter(count('prom-client')), UNUSED_BY_ACTORS, 'the index loads them all');
  t.same(loadedAfter(count(SHIM)), [], 'the shim none');
});

t.test('the actor bundles import prom-client through the shim', async (t) => {
  for (const actor of ['http', 'coap', 'manifester', 'fleet', 'store-keeper', 'sweeper']) {
    const bundle = readFileSync(join(REPO_ROOT, 'dist', 'src', 'actors', actor, 'index.bundle.mjs'), 'utf8');
    t.ok(bundle.includes('"tools/bundle/prom-client.cjs"'), `${actor}: the shim is bundled`);
    t.notOk(bundle.includes('"node_modules/prom-client/index.js"'), `${actor}: the index is not`);
  }
});

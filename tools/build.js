// `npm run build`: compiles the TypeScript into dist/ and bundles the console, doing only what
// changed since the last build, so `npm test` (which builds first) costs half a second when
// nothing did instead of a full rebuild every time. `npm run build:clean` starts from nothing.
//   1. tsc --build with its tsBuildInfo (dist/tsconfig.tsbuildinfo): skipped when no source is
//      newer than the last build; forced when package-lock.json is (new typings).
//   2. dist/ outputs whose source is gone are deleted: a test file deleted or moved would
//      otherwise stay in dist/test and tap would still run it.
//   3. the console (type check and bundle, console/build.js) is redone when the contents of its
//      inputs differ from those of its last build (a hash kept in dist/console/inputs.sha256,
//      written last): contents, not times, since tsc rewrites the module the bundle imports
//      on every build of its own.
//   4. each actor's worker module (dist/src/actors/<actor>/index.js) bundled with what it
//      imports from dist/src and plain JavaScript packages into index.bundle.mjs beside it, which the
//      supervisor starts (src/supervisor/actor-host.ts): loaded one by one, those are several
//      hundred modules per worker, and a server starts on about half the CPU bundled (bench/start.ts).
//      The device agent (dist/agent/index.js) likewise, which `updater agent` runs (src/cli.ts),
//      and the main thread of `updater serve` (dist/src/supervisor/serve.js into serve.bundle.mjs).
//      Redone when a file of dist/src or dist/agent is newer than the bundle.
// Plain JavaScript: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

const mtime = (path) => (existsSync(path) ? statSync(path).mtimeMs : -Infinity);

function run(args) {
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/** Every file under `dir` (a path relative to root), skipping node_modules. */
function filesUnder(dir) {
  const abs = join(root, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !relative(abs, e.parentPath).split('/').includes('node_modules'))
    .map((e) => join(e.parentPath, e.name));
}

// 1. The server, agent, tests, benches and tools.
const buildInfo = join(dist, 'tsconfig.tsbuildinfo');
run([tsc, '--build', 'tsconfig.json', ...(mtime(join(root, 'package-lock.json')) > mtime(buildInfo) ? ['--force'] : [])]);

// 2. Outputs of sources that are gone: dist/<path>.js and .js.map come from <path>.ts.
for (const out of filesUnder('dist')) {
  const rel = relative(dist, out);
  if (rel.startsWith(`console/`) || !/\.js(\.map)?$/.test(rel)) continue;
  const source = join(root, rel.replace(/\.js(\.map)?$/, '.ts'));
  if (!existsSync(source)) rmSync(out);
}

// 3. The console: its sources, its build script and what that script imports from dist/.
const consoleBuild = join(root, 'console', 'build.js');
const imported = [...readFileSync(consoleBuild, 'utf8').matchAll(/from '\.\.\/(dist\/[^']+)'/g)].map((m) => join(root, m[1]));
const hash = createHash('sha256');
for (const file of [...filesUnder('console'), ...imported, join(root, 'package-lock.json')].sort()) {
  hash.update(`${relative(root, file)}\0`).update(existsSync(file) ? readFileSync(file) : '(none)').update('\0');
}
const inputs = hash.digest('hex');
const stamp = join(dist, 'console', 'inputs.sha256');
if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== inputs) {
  // Bundles are named by their hash: an old one would stay beside the new one.
  rmSync(join(dist, 'console'), { recursive: true, force: true });
  run([tsc, '-p', 'console/tsconfig.json']);
  run([consoleBuild]);
  writeFileSync(stamp, inputs);
}

// 4. The actors' and the agent's bundles. The packages bundled are plain JavaScript that loads no file of its
// own by path; the others stay imports, loaded as they would be without the bundle: native
// addons (uWebSockets.js, better-sqlite3, zstd, the delta engine), and packages that find files
// beside themselves (piscina's worker, pino-pretty). Bundled CommonJS code requires Node's
// modules through the banner's require. Without keepNames: it wraps every function expression in
// a call that defines its `name` property, which runs each time a closure is made and turns the
// function into a slow dictionary-mode object. The heartbeat route makes several closures a
// request, and a perf profile of its thread put 8.7 % of its time there (bench/results/
// 2026-11-28-bundle-names.md). The cost of going without: a library class whose name another
// module of the bundle also uses is renamed with a digit (pg's DatabaseError is DatabaseError2
// in a logged error's `type`); our own classes keep their names, and errors are told apart by
// their codes (src/shared/errors.ts), never by class names.
const BUNDLED_PACKAGES = new Set(['kysely', 'zod', 'prom-client', 'pino', 'comlink', 'pg', 'yaml', 'hdr-histogram-js', 'cbor-x', 'coap', 'coap-packet']);
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const external = Object.keys(packageJson.dependencies).filter((name) => !BUNDLED_PACKAGES.has(name)).flatMap((name) => [name, `${name}/*`]);
// prom-client's index, as the bundles import it, is tools/bundle/prom-client.cjs: the same exports, loaded on first use.
const promClientShim = join(root, 'tools', 'bundle', 'prom-client.cjs');
const lazyPromClient = { name: 'lazy-prom-client', setup: (b) => b.onResolve({ filter: /^prom-client$/ }, () => ({ path: promClientShim })) };
const actorsDir = join(dist, 'src', 'actors');
const newestSource = Math.max(mtime(join(root, 'package-lock.json')), mtime(fileURLToPath(import.meta.url)), mtime(promClientShim),
  ...[...filesUnder('dist/src'), ...filesUnder('dist/agent')].filter((f) => f.endsWith('.js')).map(mtime));
const actors = existsSync(actorsDir) ? readdirSync(actorsDir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(actorsDir, e.name)) : [];
// Each entry's bundle is written beside it: the modules in it find files from their own place.
const entries = [...[...actors, join(dist, 'agent')].map((dir) => join(dir, 'index.js')), join(dist, 'src', 'supervisor', 'serve.js')];
for (const entry of entries) {
  const bundle = entry.replace(/\.js$/, '.bundle.mjs');
  if (!existsSync(entry)) {
    rmSync(bundle, { force: true });
    continue;
  }
  if (mtime(bundle) > newestSource) continue;
  await build({ entryPoints: [entry], outfile: bundle, bundle: true, platform: 'node', format: 'esm', target: 'node20', external: [...external, 'pg-native', 'cbor-extract'], logLevel: 'warning',
    plugins: [lazyPromClient],
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" } });
}

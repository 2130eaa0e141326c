// Bundles the console for the HTTP front-end: dist/console/index.html and
// dist/console/assets/<name>-<content hash>.{js,css}, each with its .br and .gz. Run by
// `npm run build`.
import { build } from 'esbuild';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
// Compiled by the tsc step of `npm run build`, which runs before this script.
import { compressConsoleFile } from '../dist/src/actors/http/admin/console-encodings.js';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'console');

const result = await build({
  entryPoints: { main: join(here, 'src', 'main.ts') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome111', 'firefox113', 'safari16.4'],
  outdir: join(out, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'eof',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs);
const pick = (ext) => {
  const found = outputs.filter((p) => p.endsWith(ext));
  if (found.length !== 1) throw new Error(`expected one ${ext} output, got ${found.join(', ') || 'none'}`);
  return basename(found[0]);
};
const names = { js: pick('.js'), css: pick('.css') };
const template = await readFile(join(here, 'index.html'), 'utf8');
await mkdir(out, { recursive: true });
await writeFile(join(out, 'index.html'), template.replace('{{js}}', names.js).replace('{{css}}', names.css));

// Brotli and gzip of each file, made here once rather than by every server start; the server
// checks that each decompresses to its file before it serves it (console-encodings.ts).
for (const path of [join(out, 'index.html'), ...[names.js, names.css].map((name) => join(out, 'assets', name))]) {
  const { br, gzip } = compressConsoleFile(await readFile(path));
  await writeFile(`${path}.br`, br);
  await writeFile(`${path}.gz`, gzip);
}

let raw = 0;
let gzip = 0;
for (const name of [names.js, names.css]) {
  const bytes = await readFile(join(out, 'assets', name));
  raw += bytes.length;
  gzip += gzipSync(bytes, { level: 9 }).length;
}
process.stdout.write(`console: ${names.js} + ${names.css}, ${(raw / 1024).toFixed(1)} KiB (${(gzip / 1024).toFixed(1)} KiB gzip)\n`);

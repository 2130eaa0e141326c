import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { packageRoot } from '../../src/shared/package-root.js';
import { REPO_ROOT } from '../helpers/server.js';

t.test('the root is the nearest directory above the module that holds package.json, at any depth', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'package-root-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const nested = join(dir, 'dist', 'src', 'actors', 'http', 'admin');
  await mkdir(nested, { recursive: true });
  t.throws(() => packageRoot(pathToFileURL(join(nested, 'console.js')).href), /no package.json above/, 'none above: an error that names the module');
  await writeFile(join(dir, 'package.json'), '{}');
  t.equal(packageRoot(pathToFileURL(join(nested, 'console.js')).href), dir, 'five levels down (a module on its own)');
  t.equal(packageRoot(pathToFileURL(join(dir, 'dist', 'src', 'actors', 'http', 'index.bundle.mjs')).href), dir, 'four levels down (the bundle)');
  await writeFile(join(dir, 'dist', 'package.json'), '{}');
  t.equal(packageRoot(pathToFileURL(join(nested, 'console.js')).href), join(dir, 'dist'), 'the nearest one wins');
});

t.test('this repository\'s modules find its root', async (t) => {
  t.equal(packageRoot(pathToFileURL(join(REPO_ROOT, 'dist', 'src', 'shared', 'package-root.js')).href), REPO_ROOT);
});

import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../helpers/server.js';

// docs/metrics.md lists every metric the server exports: an operator reads it to build
// dashboards and alerts, so a metric added in the code without a line there fails here.

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(entries.map((e) => (e.isDirectory() ? sourceFiles(join(dir, e.name)) : Promise.resolve(e.name.endsWith('.ts') ? [join(dir, e.name)] : []))));
  return nested.flat();
}

t.test('docs/metrics.md names every metric registered in src/', async (t) => {
  const doc = await readFile(join(REPO_ROOT, 'docs', 'metrics.md'), 'utf8');
  const names = new Set<string>();
  for (const file of await sourceFiles(join(REPO_ROOT, 'src'))) {
    const text = await readFile(file, 'utf8');
    for (const m of text.matchAll(/(?:name:\s*|new FastHistogram\()'(updater_[a-z0-9_]+)'/g)) names.add(m[1]!);
  }
  t.ok(names.size >= 30, `${names.size} metric names found in src/`);
  for (const name of names) t.ok(doc.includes(`\`${name}`), `${name} is documented`);
});

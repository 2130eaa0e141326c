import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../helpers/server.js';

// docs/architecture.md promises that each behaviour is at most two imports from its actor's
// entry (`index.ts`, or the diff pool's task file), and names the path. This reads that table
// and follows each path through the real imports, so a move that makes a behaviour harder to
// find, or a path the docs invented, fails here.

const ACTORS = join(REPO_ROOT, 'src', 'actors');
/** A documented path: under src/actors/, but `shared/…` under src/. */
const fileOf = (p: string) => resolve(p.startsWith('shared/') ? join(REPO_ROOT, 'src') : ACTORS, p);
const SECTION = '## From an actor\'s entry to each behaviour';
const ENTRIES = /^(?:[a-z-]+\/index\.ts|diff-pool\/task\.ts)$/;
/**
 * Actors whose concerns each have a folder (device-facing apart from operator-facing, issue 37):
 * a behaviour of theirs ends in one of those folders, or in code shared beyond the actor.
 */
const FOLDERED = ['http', 'coap', 'fleet'];

/** The files a source file imports by a relative path (type imports and re-exports included). */
function importsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8');
  const found = new Set<string>();
  for (const m of text.matchAll(/(?:import|export)\s[^'";]*?from\s+'(\.{1,2}\/[^']+)'/g)) {
    found.add(resolve(dirname(file), m[1]!).replace(/\.js$/, '.ts'));
  }
  return found;
}

function documentedPaths(): { behaviour: string; path: string[] }[] {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'architecture.md'), 'utf8');
  const start = doc.indexOf(SECTION);
  if (start < 0) return [];
  const end = doc.indexOf('\n## ', start + SECTION.length);
  const rows = doc.slice(start, end < 0 ? undefined : end).split('\n').filter((line) => line.startsWith('| ') && line.includes('→'));
  return rows.map((row) => {
    const cells = row.split('|').map((c) => c.trim());
    return { behaviour: cells[1]!, path: cells[2]!.replace(/`/g, '').split('→').map((p) => p.trim()) };
  });
}

t.test('every documented path is real imports, at most two from the actor\'s entry', async (t) => {
  const rows = documentedPaths();
  t.ok(rows.length >= 20, `${rows.length} behaviours are listed under "${SECTION}"`);
  const actorsListed = new Set(rows.map((r) => r.path[0]!.split('/')[0]));
  for (const actor of ['http', 'coap', 'manifester', 'store-keeper', 'diff-pool', 'sweeper', 'fleet']) {
    t.ok(actorsListed.has(actor), `${actor} has behaviours listed`);
  }
  for (const { behaviour, path } of rows) {
    t.match(path[0], ENTRIES, `${behaviour}: starts at an actor's entry`);
    t.ok(path.length >= 2 && path.length <= 3, `${behaviour}: ${path.length - 1} hop(s), at most two`);
    const actor = path[0]!.split('/')[0]!;
    const last = path[path.length - 1]!;
    if (FOLDERED.includes(actor) && last.startsWith(`${actor}/`)) {
      t.ok(last.split('/').length >= 3, `${behaviour}: ${last} is in a folder named for its concern`);
    }
    const files = path.map(fileOf);
    for (const [i, file] of files.entries()) {
      t.ok(existsSync(file), `${behaviour}: ${path[i]} exists`);
      if (i > 0 && existsSync(files[i - 1]!)) t.ok(importsOf(files[i - 1]!).has(file), `${behaviour}: ${path[i - 1]} imports ${path[i]}`);
    }
  }
});

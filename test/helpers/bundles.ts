import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './server.js';

// What the tests of the bundles `npm run build` makes (tools/build.js: each actor's, and the
// agent's) check in each: that esbuild renamed none of our classes, since logs name them.

/** The names of the classes declared in the compiled modules under dist/`dirs`. */
export function ourClasses(...dirs: string[]): Set<string> {
  const names = new Set<string>();
  for (const dir of dirs.map((d) => join(REPO_ROOT, 'dist', d))) {
    for (const file of readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'))) {
      for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/\bclass (\w+)/g)) names.add(m[1]!);
    }
  }
  return names;
}

/** Which of `ours` the bundle declares under another name (esbuild adds a digit on a clash). */
export function renamedClasses(bundle: string, ours: ReadonlySet<string>): string[] {
  return [...bundle.matchAll(/\bclass (\w+?)(\d+)\b|\b(\w+?)(\d+) = class\b/g)].map((m) => m[1] ?? m[3]!).filter((name) => ours.has(name));
}

/** The newest modification time of a compiled module under dist/`dirs`. */
export function newestModule(...dirs: string[]): number {
  let newest = 0;
  for (const dir of dirs.map((d) => join(REPO_ROOT, 'dist', d))) {
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (entry.isFile() && entry.name.endsWith('.js')) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

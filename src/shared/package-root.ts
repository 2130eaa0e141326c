import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// A module that finds a file of the package by its own place (`import.meta.url`) must not
// count directories: an actor's modules also run bundled into one file at another depth
// (dist/src/actors/<actor>/index.bundle.mjs, tools/build.js). The package's root is the nearest
// directory above the module that holds package.json, bundled or not.

/** The directory of the package that holds the module at `moduleUrl` (its `import.meta.url`). */
export function packageRoot(moduleUrl: string): string {
  let dir = dirname(fileURLToPath(moduleUrl));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(moduleUrl)}`);
    dir = parent;
  }
  return dir;
}

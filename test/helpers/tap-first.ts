import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { staticImports } from './tap-env.js';

// `npm test` puts this module in the NODE_OPTIONS of tap and every test file it starts
// (tap-env.ts), and Node runs the `--import`s of NODE_OPTIONS before those of the command line.
// tap starts each test file with `--import` of its process-info hook, which on Node 20 runs
// module hooks on a thread of their own: every module loaded after it is resolved and loaded
// through that thread, and its source is sent back to the test's thread to be measured
// (`import 'tap'` cost 1.33 s of CPU behind the hook and 0.44 s without it). So tap, then the
// test file's static imports, in their order, are loaded here, before the hook exists; the test
// file finds them in the module cache. They would be evaluated before the file's body anyway.
// What a test imports dynamically still passes through the hook.
//
// Only in a test file's own process: tap's runner, its before and after scripts and the
// processes the tests start (which inherit the variables) load nothing here.

const main = process.argv[1] ?? '';
if (process.env.TAP_CHILD_ID !== undefined && /\.test\.js$/.test(main)) {
  await import('tap');
  for (const specifier of staticImports(readFileSync(main, 'utf8'))) {
    // Relative to the test file; a package name resolves the same from here (one node_modules).
    await import(specifier.startsWith('.') ? new URL(specifier, pathToFileURL(main)).href : specifier);
  }
}

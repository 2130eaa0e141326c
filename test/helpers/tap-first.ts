import module from 'node:module';
import { setFlagsFromString } from 'node:v8';

// `npm test` puts this module in the NODE_OPTIONS of tap and every test file it starts
// (tap-env.ts), and Node runs the `--import`s of NODE_OPTIONS before those of the command line.
// tap starts each test file with `--import` of its process-info hook (@tapjs/processinfo), which
// serves coverage and `tap --changed`; the suite uses neither (coverage is off in package.json).
// On Node 20 the hook costs every test file about 0.3 s of CPU: it starts a thread of its own
// for module hooks, through which every module loaded after it is resolved and loaded and its
// source sent back to be measured, and it registers a require hook, a rewrite of every child
// process's environment and a JSON record written at exit (.tap/processinfo). So, in a test
// file's own process, it is kept idle before it runs:
//
// - its record of the process is put in place first, so its registrations (made only when it
//   creates that record) are never made;
// - its call to module.register (the hooks thread) is skipped, once, and register is put back.
//
// It also keeps WebAssembly in V8's baseline tier there (below).
//
// Only in a test file's own process: tap's runner, its before and after scripts and the
// processes the tests start (which inherit the variables) are left as tap makes them.

const PROCESS_INFO = Symbol.for('@tapjs/processinfo.ProcessInfoNodeData');
const main = process.argv[1] ?? '';

if (process.env.TAP_CHILD_ID !== undefined && /\.test\.js$/.test(main)) {
  // Node's fetch parses HTTP with llhttp compiled to WebAssembly, and V8 recompiles its hot
  // functions in the optimizing tier in the background: more CPU than a test file's few hundred
  // requests ever win back (a process of 50 fetches: 0.36 s of CPU with V8's baseline tier
  // only, against 0.53 s; of 1,000: 1.97 against 2.14). No check depends on which tier runs.
  setFlagsFromString('--liftoff-only');
  const globals = globalThis as unknown as Record<symbol, unknown>;
  globals[PROCESS_INFO] ??= { files: [], sources: Object.create(null) as object, idle: true };
  const register = module.register;
  module.register = function registerUnlessProcessInfo(this: unknown, specifier: string | URL, ...rest: unknown[]) {
    if (String(specifier).includes('/@tapjs/processinfo/')) {
      module.register = register;
      return;
    }
    return (register as (...args: unknown[]) => void).call(this, specifier, ...rest);
  } as typeof module.register;
}

// `npm test` puts this module in the NODE_OPTIONS of tap and every test file it starts
// (tap-env.ts), and Node runs the `--import`s of NODE_OPTIONS before those of the command line.
// tap starts each test file with `--import` of its process-info hook, which on Node 20 runs
// module hooks on a thread of their own: every module loaded after it is resolved and loaded
// through that thread, and its source is sent back to the test's thread to be measured. tap's
// own modules are most of what a small test file loads (`import 'tap'` cost 1.33 s of CPU
// behind the hook and 0.44 s without it). Imported here first, they are in the module cache
// before the hook exists, and the test file's `import t from 'tap'` finds them there.
//
// Only in a test file's own process: tap's runner, its before and after scripts and the
// processes the tests start (which inherit the variables) load nothing here.

const testFile = process.env.TAP_CHILD_ID !== undefined && /\.test\.js$/.test(process.argv[1] ?? '');
if (testFile) await import('tap');

export {};

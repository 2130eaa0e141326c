// Lint: typescript-eslint's recommended rules, no floating or misused promise in the server and
// the agent (type-aware, so those files are read with the compiler's view), and the import rule of
// docs/architecture.md ("Import rule"):
//   - an actor (src/actors/<name>/) imports only src/messages/, src/shared/, its own folder and
//     the actor runtime beside it (src/actors/runtime.ts), never another actor's folder; the one
//     exception is the diff pool, the store-keeper's own worker pool, whose pool.ts the
//     store-keeper imports to start it;
//   - the front-ends' shared helpers (src/actors/front-ends/) are imported by the two
//     front-ends (http, coap) only, and import no actor's folder themselves;
//   - messages and shared code import no actor and no supervisor, and shared code no message
//     module (src/messages builds on src/shared, never the other way, so they form no cycle);
//   - bench/ and test/ may import any module of src/actors/<actor>/; the benchmarks never
//     import the supervisor;
//   - the agent, the load simulator (src/load/) and tools/ never import src/actors or src/supervisor;
//   - no import cycle anywhere (lint/no-cycle.js).
import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import noCycle from './lint/no-cycle.js';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

/** The folder of code the two front-ends share: a library under src/actors/, not an actor. */
const FRONT_END_HELPERS = 'front-ends';
/** The actors that may import it. */
const FRONT_ENDS = ['http', 'coap'];
/** Every actor folder, read from the tree, so a new actor is covered without an edit here. */
const ACTORS = readdirSync(new URL('./src/actors/', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== FRONT_END_HELPERS).map((d) => d.name);
/** What an actor may import from another actor's folder: nothing, but the diff pool's start. */
const ALLOWED_ACROSS = { 'store-keeper': { 'diff-pool': 'pool\\.js$' } };

/** The rule for one actor's folder: any relative path that climbs into another actor's folder is refused. */
const actorRule = (actor) => ({
  files: [`src/actors/${actor}/**/*.ts`],
  rules: restrict([
    ...ACTORS.filter((other) => other !== actor).map((other) => {
      const allowed = ALLOWED_ACROSS[actor]?.[other];
      return {
        regex: `^(\\.\\./)+${other}/${allowed ? `(?!${allowed})` : ''}`,
        message: `An actor imports only src/messages, src/shared, its own folder and the actor runtime: ${actor} may not import ${other}'s folder.`,
      };
    }),
    { regex: '^(\\.\\./)+(supervisor|cli|load)(/|\\.js$)', message: 'An actor never imports the supervisor, the CLI or the load simulator.' },
    ...(FRONT_ENDS.includes(actor) ? [] : [{
      regex: `^(\\.\\./)+${FRONT_END_HELPERS}/`,
      message: `src/actors/${FRONT_END_HELPERS}/ is the front-ends' (${FRONT_ENDS.join(', ')}): ${actor} may not import it.`,
    }]),
  ]),
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.tap/**', 'bin/**', 'examples/**', 'deploy/**', 'native/delta/build/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { process: 'readonly', Buffer: 'readonly', console: 'readonly' } },
    rules: {
      // Unused names are dead code; a leading underscore marks one kept on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      // Tests and the harness speak to untyped library internals (node-coap's socket, tap's
      // fixtures); `any` there is deliberate and local.
      '@typescript-eslint/no-explicit-any': 'off',
      // Type checking is tsc's job (npm run build); these duplicate it with less context.
      'no-undef': 'off',
      'no-redeclare': 'off',
    },
  },
  {
    // A promise nobody settles in the server or the agent: its rejection would be an uncaught
    // exception, and end an actor's thread (an audit row lost once ended the HTTP front-end)
    // or the agent. Settle it (await, .catch) or say it is settled elsewhere (void).
    files: ['src/**/*.ts', 'agent/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true }],
      // A promise handed where nothing settles it (a callback typed to return void).
      '@typescript-eslint/no-misused-promises': ['error', { checksConditionals: false, checksSpreads: false }],
    },
  },
  {
    // No import cycle anywhere (lint/no-cycle.js), type-only imports included.
    files: ['**/*.ts'],
    plugins: { local: { rules: { 'no-cycle': noCycle } } },
    rules: { 'local/no-cycle': 'error' },
  },
  {
    // The native engine's loader is CommonJS (node-gyp's addon is loaded with require).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  ...ACTORS.map(actorRule),
  {
    files: [`src/actors/${FRONT_END_HELPERS}/**/*.ts`],
    rules: restrict([
      { regex: '^\\.\\./(?!\\.\\.)[^/]+/', message: 'The front-ends\' helpers import no actor\'s folder (only the runtime, src/messages and src/shared).' },
      { regex: '^(\\.\\./)+(supervisor|cli)(/|\\.js$)', message: 'The front-ends\' helpers never import the supervisor or the CLI.' },
    ]),
  },
  {
    files: ['src/actors/*.ts'],
    rules: restrict([
      { regex: '^\\./[^/]+/', message: 'The actor runtime is shared by every actor: it imports no actor\'s folder.' },
      { regex: '^\\.\\./(supervisor|cli)', message: 'The actor runtime never imports the supervisor or the CLI.' },
    ]),
  },
  {
    files: ['src/messages/**/*.ts'],
    rules: restrict([
      { regex: '/(actors|supervisor)/|^\\.\\./cli', message: 'Messages import no actor, supervisor or CLI.' },
    ]),
  },
  {
    files: ['src/shared/**/*.ts'],
    rules: restrict([
      { regex: '/(actors|supervisor)/|^(\\.\\./)+cli', message: 'Shared code imports no actor, supervisor or CLI.' },
      { regex: '^(\\.\\./)+messages/', message: 'Shared code imports no message module: src/messages builds on src/shared, so the two form no cycle.' },
    ]),
  },
  {
    files: ['bench/**/*.ts'],
    rules: restrict([
      { regex: '/src/supervisor/', message: 'The benchmarks may import any actor module, never the supervisor (they start the server as a user does).' },
    ]),
  },
  {
    files: ['agent/**/*.ts', 'src/load/**/*.ts', 'tools/**/*.ts'],
    rules: restrict([
      { regex: '(^|/)(src/)?(actors|supervisor)/', message: 'The agent, the load simulator and tools use src/shared (the wire module) and src/messages, never an actor or the supervisor.' },
    ]),
  },
);

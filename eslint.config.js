// Lint: typescript-eslint's recommended rules and the import boundaries of docs/architecture.md.
//   - an actor (src/actors/<name>/) imports only src/messages/, src/shared/, its own folder and
//     the actor runtime beside it (src/actors/*.ts), never another actor's folder;
//   - messages and shared code import no actor and no supervisor;
//   - the agent, the load harness and the benchmarks never import src/actors or src/supervisor.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

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
    // The native engine's loader is CommonJS (node-gyp's addon is loaded with require).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['src/actors/*/**/*.ts'],
    rules: restrict([
      { regex: '^\\.\\./(?!\\.)[^/]+/', message: 'An actor imports only src/messages, src/shared, its own folder and the actor runtime: not another actor\'s folder.' },
      { regex: '^\\.\\./\\.\\./(supervisor|cli)', message: 'An actor never imports the supervisor or the CLI.' },
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
    files: ['src/messages/**/*.ts', 'src/shared/**/*.ts'],
    rules: restrict([
      { regex: '/(actors|supervisor)/|^\\.\\./cli', message: 'Messages and shared code import no actor, supervisor or CLI.' },
    ]),
  },
  {
    files: ['agent/**/*.ts', 'bench/**/*.ts', 'tools/**/*.ts'],
    rules: restrict([
      { regex: '/src/(actors|supervisor)/', message: 'The agent, the load harness, the benchmarks and tools use src/shared (the wire module) and src/messages, never an actor or the supervisor.' },
    ]),
  },
);

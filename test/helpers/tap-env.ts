// The environment `npm test` (run-tests.ts) and `npm run test:stress` (stress.ts) start tap in.

/** The module that loads tap and a test file's static imports before tap's process-info hook (tap-first.ts). */
export const TAP_FIRST = new URL('./tap-first.js', import.meta.url).href;

/**
 * `env` for tap: with tap-first.ts in NODE_OPTIONS (quoted, for a checkout whose path has a
 * space), and without the host's NODE_EXTRA_CA_CERTS. The tests talk only to 127.0.0.1 and bring
 * their own CAs; with it, every node process parses the file at its start (80 of the 120 ms of
 * `node -e 1` here, where it names the whole system bundle), and the suite starts hundreds.
 */
export function tapEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _hostCas, ...rest } = env;
  const nodeOptions = [JSON.stringify(`--import=${TAP_FIRST}`), rest.NODE_OPTIONS ?? ''].join(' ').trim();
  return { ...rest, NODE_OPTIONS: nodeOptions };
}

/**
 * The import statements a compiled test file opens with (tsc writes one a statement, types
 * erased), with the comments and blank lines between them; the scan ends at the first other
 * statement. A later import is left to the hook, and so is the text of an `import` line inside
 * a template string (a page's source that a test bundles, say).
 */
const LEADING_IMPORT = /(?:\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*import\s(?:[^;'"]*?\sfrom\s)?['"]([^'"]+)['"];/y;

/** The specifiers of the import statements `source` opens with, in their order. */
export function staticImports(source: string): string[] {
  const specifiers: string[] = [];
  LEADING_IMPORT.lastIndex = 0;
  for (let match = LEADING_IMPORT.exec(source); match; match = LEADING_IMPORT.exec(source)) specifiers.push(match[1]!);
  return specifiers;
}

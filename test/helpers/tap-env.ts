// The environment `npm test` (run-tests.ts) and `npm run test:stress` (stress.ts) start tap in.

/** The module that keeps tap's process-info hook idle in a test file's process (tap-first.ts). */
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

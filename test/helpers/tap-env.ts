import { spawnSync } from 'node:child_process';

// The environment `npm test` (run-tests.ts) and `npm run test:stress` (stress.ts) start tap in,
// and the plugin set they have it built with first.

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

/**
 * Has tap build its plugin set (package.json's "tap.plugin") when the one in node_modules is
 * another, as it is on the first run after `npm install`. tap would build it itself, but after
 * its runner has loaded the default set, and it starts every test file of that run with the
 * default set's loaders (TypeScript's and mock's): about 1.1 s more CPU a test process, 140 s
 * more of the suite's wall time in CI (bench/results/2026-11-29-suite-fresh-clone.md).
 */
export async function buildTapPlugins(): Promise<void> {
  const [{ TapConfig }, { signature }] = await Promise.all([import('@tapjs/config'), import('@tapjs/test')]);
  // Not TapConfig.load(): it parses this process's arguments, which are the wrapper's (--quick, --busy).
  const config = (await new TapConfig().loadPluginConfigFields().loadConfigFile()).parse([]);
  if (config.pluginSignature === signature) return;
  const built = spawnSync('tap', ['build'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error(`tap build failed (${built.status ?? built.signal})`);
}

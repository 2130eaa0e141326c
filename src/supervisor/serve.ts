import { ConfigError, loadConfigFile } from '../shared/config/load.js';
import { startServer } from './index.js';

/**
 * `updater serve` once its arguments are read (src/cli.ts): loads the configuration, starts the
 * supervisor and its actors, and drains them on SIGTERM or SIGINT. Resolves with the exit code.
 */
export async function serve(configPath: string): Promise<number> {
  let config;
  try {
    config = loadConfigFile(configPath);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`updater serve: configuration error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  let exitCode = 0;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const supervisor = await startServer(config, {
    onFatal: () => {
      exitCode = 1;
      resolveDone();
    },
  }).catch((err: Error & { code?: string }) => {
    process.stderr.write(`updater serve: could not start: ${err.code ? `${err.code}: ` : ''}${err.message}\n`);
    return err;
  });
  // A database that cannot be reached is a configuration problem: the message names `database`.
  if (supervisor instanceof Error) return (supervisor as { code?: string }).code === 'DATABASE_UNREACHABLE' ? 2 : 1;
  const shutdown = (signal: string) => {
    supervisor.log.info({ signal }, 'draining');
    supervisor.stop().then(resolveDone, resolveDone);
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  await done;
  return exitCode;
}

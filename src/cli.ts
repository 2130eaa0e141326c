import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { publicKeyHex, readPrivateKeyFile, writePrivateKeyFile } from './shared/signing.js';

// Each command loads only its own modules: a device agent's cycle or a spawned `updater serve`
// starts in about half the time it took when the server, the agent and the load harness were
// all loaded for any command (the test suite starts hundreds of them).

/**
 * The module the agent command runs: the agent bundled into one file by `npm run build`
 * (tools/build.js), which loads in half the CPU of its modules one by one (a device starts the
 * agent at every boot, the test suite hundreds of times); the agent's own index.js with
 * UPDATER_UNBUNDLED=1 (for profiles and stack traces that name the source files) or when no
 * bundle was built.
 */
export function agentFile(): URL {
  const bundle = new URL('../agent/index.bundle.mjs', import.meta.url);
  return process.env.UPDATER_UNBUNDLED !== '1' && existsSync(bundle) ? bundle : new URL('../agent/index.js', import.meta.url);
}

const agentModule = () => import(agentFile().href) as Promise<typeof import('../agent/index.js')>;

/**
 * The module `updater serve` runs in its main thread, the supervisor and the configuration's
 * loader: bundled by `npm run build` as the actors and the agent are (a spawned server's main
 * thread loads it in about 80 ms of CPU instead of about 220); supervisor/serve.js with
 * UPDATER_UNBUNDLED=1 or when no bundle was built. Bundled it sits where serve.js does, so
 * that the supervisor finds the actors' modules from it as from its own modules.
 */
export function serveFile(): URL {
  const bundle = new URL('./supervisor/serve.bundle.mjs', import.meta.url);
  return process.env.UPDATER_UNBUNDLED !== '1' && existsSync(bundle) ? bundle : new URL('./supervisor/serve.js', import.meta.url);
}

const serveModule = () => import(serveFile().href) as Promise<typeof import('./supervisor/serve.js')>;

const USAGE = `usage: updater <command> [options]

commands:
  serve --config FILE     run the update server (supervisor and its actors)
  keygen --out FILE       write a new Ed25519 signing key; prints the public key (hex)
  pubkey --key FILE       print the public key (hex) of an existing signing key
  certify --root ROOT_KEY --key HEX --valid 365d --serial N --out FILE
                          certify a signing key with an offline root key (key rotation)
  agent --config FILE     run the device agent (--once: one update cycle, then exit)
  load [options]          simulate a fleet of devices against a running server
  push FILE --track KEY --version V   upload a build and publish it (token in UPDATER_TOKEN)

Run "updater <command> --help" for the options of a command.
`;

const HELP: Record<string, string | (() => Promise<string>)> = {
  load: async () => (await import('./load/cli.js')).LOAD_HELP,
  serve: `usage: updater serve --config FILE [--pretty]

Runs the server. The configuration is validated before anything listens; an error names the
key and exits with status 2, as does a database key that cannot be reached. SIGTERM or SIGINT
drains the actors and exits 0.

Logs go to stdout: lines for a person on a terminal (or with --pretty), JSON lines otherwise
(a file, a pipe, journald). UPDATER_LOG_PRETTY=0 asks for JSON on a terminal too.
`,
  keygen: `usage: updater keygen --out FILE

Writes a new Ed25519 private key to FILE as PKCS#8 PEM (what "openssl pkey" reads; mode
0600; an existing file is never overwritten) and prints the public key, 64 hex characters,
as the only line on stdout. Give that public key to the device agents (public_key in their
configuration).
`,
  pubkey: `usage: updater pubkey --key FILE

Prints the public key of the signing key in FILE, 64 hex characters, as the only line on
stdout: what the device agents need as public_key. FILE is PKCS#8 PEM (as keygen writes, or
an Ed25519 key from "openssl genpkey -algorithm ed25519") or a key in the earlier format.
`,
  agent: async () => (await agentModule()).AGENT_HELP,
  certify: async () => (await import('./cli/certify.js')).CERTIFY_HELP,
  push: async () => (await import('./cli/push.js')).PUSH_HELP,
};

async function helpOf(command: string): Promise<string> {
  const help = HELP[command];
  return typeof help === 'function' ? help() : (help ?? USAGE);
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return command ? 0 : 2;
  }
  const handler = COMMANDS[command];
  if (!handler) {
    process.stderr.write(`updater: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(await helpOf(command));
    return 0;
  }
  return handler(rest);
}

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  serve: serveCommand,
  keygen: oneFileCommand('keygen', 'out', writePrivateKeyFile),
  pubkey: oneFileCommand('pubkey', 'key', async (file) => publicKeyHex(await readPrivateKeyFile(file))),
  agent: async (args) => (await agentModule()).agentCommand(args),
  certify: async (args) => (await import('./cli/certify.js')).certifyCommand(args),
  push: async (args) => (await import('./cli/push.js')).pushCommand(args),
  load: async (args) => {
    try {
      return await (await import('./load/cli.js')).loadCommand(args);
    } catch (err) {
      process.stderr.write(`updater load: ${(err as Error).message}\n`);
      return 2;
    }
  },
};

function options(args: string[], names: string[]): Record<string, string | undefined> {
  const { values } = parseArgs({ args, options: Object.fromEntries(names.map((n) => [n, { type: 'string' as const }])), strict: true });
  return values as Record<string, string | undefined>;
}

/** keygen and pubkey: one required FILE option, one line on stdout. */
function oneFileCommand(command: string, option: string, print: (file: string) => Promise<string>) {
  return async (args: string[]): Promise<number> => {
    const file = options(args, [option])[option];
    if (!file) {
      process.stderr.write(`updater ${command}: --${option} FILE is required\n\n${await helpOf(command)}`);
      return 2;
    }
    try {
      process.stdout.write(`${await print(file)}\n`);
      return 0;
    } catch (err) {
      process.stderr.write(`updater ${command}: ${(err as Error).message}\n`);
      return 1;
    }
  };
}

async function serveCommand(args: string[]): Promise<number> {
  // Set before any logger exists: the actor threads inherit the environment.
  if (args.includes('--pretty')) process.env.UPDATER_LOG_PRETTY = '1';
  const { config: configPath } = options(args.filter((a) => a !== '--pretty'), ['config']);
  if (!configPath) {
    process.stderr.write(`updater serve: --config FILE is required\n\n${await helpOf('serve')}`);
    return 2;
  }
  return (await serveModule()).serve(configPath);
}

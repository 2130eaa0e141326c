import { createRequire } from 'node:module';
import { isatty } from 'node:tty';
import pino, { type DestinationStream, type Logger, type LevelWithSilent } from 'pino';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/**
 * Lines for a person when stdout is a terminal, or when `--pretty` asked for them (the CLI sets
 * UPDATER_LOG_PRETTY=1, which the actor threads inherit; 0 asks for JSON on a terminal too);
 * JSON lines otherwise: a file, a pipe, journald. isatty(1) asks about the process's own fd 1,
 * so every thread gives the same answer.
 */
export function prettyLogs(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.UPDATER_LOG_PRETTY === '1') return true;
  if (env.UPDATER_LOG_PRETTY === '0') return false;
  return isatty(1);
}

function prettyStream(): DestinationStream {
  // Loaded only for a person: the JSON path (services, tests) never pays for it.
  const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream;
  return pretty({
    destination: 1,
    sync: true,
    colorize: isatty(1),
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,component',
    messageFormat: '{component}: {msg}',
    singleLine: true,
  });
}

/**
 * Every thread logs straight to stdout (fd 1) with synchronous writes, so the last lines
 * before a crash are never lost in a buffer: JSON lines, or the same records formatted for a
 * person (prettyLogs). `component` names the actor.
 */
export function createLogger(component: string, level: LogLevel | LevelWithSilent): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, component },
      redact: { paths: ['token', 'authorization', 'headers.authorization'], censor: '[redacted]' },
    },
    prettyLogs() ? prettyStream() : pino.destination({ fd: 1, sync: true }),
  );
}

export type { Logger };

import pino, { type Logger, type LevelWithSilent } from 'pino';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/**
 * Every thread logs JSON lines straight to stdout (fd 1) with synchronous writes, so the
 * last lines before a crash are never lost in a buffer. `component` names the actor.
 */
export function createLogger(component: string, level: LogLevel | LevelWithSilent): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, component },
      redact: { paths: ['token', 'authorization', 'headers.authorization'], censor: '[redacted]' },
    },
    pino.destination({ fd: 1, sync: true }),
  );
}

export type { Logger };

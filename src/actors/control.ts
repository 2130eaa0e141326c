import { isLogLevel, type LogLevel } from '../shared/logger.js';
import { UpdaterError } from '../shared/errors.js';
import type { ActorContext } from './runtime.js';

// The control half every actor shares (metrics and log level).

export async function collectMetrics(ctx: ActorContext): Promise<unknown[]> {
  return ctx.registry.getMetricsAsJSON();
}

export function setLevel(ctx: ActorContext, level: LogLevel): void {
  if (!isLogLevel(level)) throw new UpdaterError('INVALID_FIELD', `unknown log level ${String(level)}`);
  ctx.log.level = level;
}

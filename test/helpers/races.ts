import type { Kysely } from 'kysely';
import type { Database } from '../../src/shared/database/schema.js';
import { errorStatus } from '../../src/shared/errors.js';

// What the race tests (test/actors/fleet/**/*-race.test.ts) share: many calls at once, spread
// over a cluster's replicas, and what the API would have answered to each.

/** The answer each call would give (HTTP status and code), counted; an internal failure keeps the driver's message. */
export function outcomes(results: PromiseSettledResult<unknown>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const { http, code } = r.status === 'fulfilled' ? { http: 200, code: '' } : errorStatus(r.reason);
    // The operator would see only "internal error"; the test names the cause.
    const key = r.status === 'fulfilled' ? '200' : code === 'INTERNAL' ? `${http} ${code}: ${(r.reason as Error).message}` : `${http} ${code}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** Calls `fn` `n` times at once, spread over the replicas. */
export function concurrently<T>(dbs: Kysely<Database>[], n: number, fn: (db: Kysely<Database>, i: number) => Promise<T>): Promise<PromiseSettledResult<T>[]> {
  return Promise.allSettled(Array.from({ length: n }, (_, i) => fn(dbs[i % dbs.length]!, i)));
}

/** The values of the calls that succeeded. */
export const fulfilled = <T>(results: PromiseSettledResult<T>[]): T[] => results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));

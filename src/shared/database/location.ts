import type { Engine } from './schema.js';

// What a `database` location names, without loading Kysely: the configuration's load asks
// once (config.cluster, which every actor reads), and connect.ts when it opens a database.
// Kysely's few hundred modules cost each worker thread that imports them a noticeable part of
// the server's start, so only the threads that open a database load them.

/** What makes a location PostgreSQL: this spelling only, written here once (the configuration refuses near misses). */
const POSTGRES_URL = /^postgres(ql)?:\/\//;

export function engineOf(location: string): Engine {
  return POSTGRES_URL.test(location) ? 'postgres' : 'sqlite';
}

/** The URL with its password masked, for messages and logs. */
export function redactDatabaseUrl(location: string): string {
  if (engineOf(location) !== 'postgres') return location;
  return location.replace(/^([^:]+:\/\/[^:/@]*:)[^@]*@/, '$1***@');
}

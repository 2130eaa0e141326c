import type { Engine } from './schema.js';

// What a `database` location names, without loading Kysely: the configuration's load asks
// once (config.cluster, which every actor reads), and connect.ts when it opens a database.
// Kysely's few hundred modules cost each worker thread that imports them a noticeable part of
// the server's start, so only the threads that open a database load them.

export function engineOf(location: string): Engine {
  return /^postgres(ql)?:\/\//.test(location) ? 'postgres' : 'sqlite';
}

/** The URL with its password masked, for messages and logs. */
export function redactDatabaseUrl(location: string): string {
  return location.replace(/^(postgres(?:ql)?:\/\/[^:/@]*:)[^@]*@/, '$1***@');
}

import type { Engine } from './schema.js';

// What a `database` location names, without loading Kysely: the store-keeper, the manifester
// and the sweeper ask only this on a single node, and Kysely's few hundred modules cost each
// worker thread that imports them a noticeable part of the server's start (connect.ts loads
// them where a database is opened).

export function engineOf(location: string): Engine {
  return /^postgres(ql)?:\/\//.test(location) ? 'postgres' : 'sqlite';
}

/** The URL with its password masked, for messages and logs. */
export function redactDatabaseUrl(location: string): string {
  return location.replace(/^(postgres(?:ql)?:\/\/[^:/@]*:)[^@]*@/, '$1***@');
}

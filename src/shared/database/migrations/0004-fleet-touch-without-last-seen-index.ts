import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

/**
 * The heartbeat flush touches every device's last_seen about as often as devices check in,
 * and an index on it made each touch an index write as well: on PostgreSQL it also ruled out
 * HOT updates (a new row version without a new entry in every index), which made a touch
 * several times dearer. Retention's scan by last_seen runs once per retention interval, and a
 * device list filtered by it walks device_id order with the filter, so neither needs the
 * index. Free room on each PostgreSQL page lets the new row version stay on its page (HOT);
 * it applies to pages written from now on (VACUUM FULL devices applies it to the others).
 */
export function fleet0004(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('devices_last_seen').execute();
      if (engine === 'postgres') await sql`alter table devices set (fillfactor = 80)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine === 'postgres') await sql`alter table devices reset (fillfactor)`.execute(db);
      await db.schema.createIndex('devices_last_seen').on('devices').column('last_seen').execute();
    },
  };
}

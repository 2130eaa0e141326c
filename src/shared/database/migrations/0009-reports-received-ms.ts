import { type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

/**
 * Reports keep the moment they were received to the millisecond. A rollout counts the reports
 * received from its start (or resume) on, and with whole seconds it had to round that moment
 * up: every report of the first second was lost (20 failure reports sent right after a publish
 * counted as none). Nullable, so adding it rewrites no row on either engine; rows from before
 * keep their whole seconds (inventory/queries.ts reads them as before).
 */
export function reports0009(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('reports').addColumn('received_at_ms', big).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('reports').dropColumn('received_at_ms').execute();
    },
  };
}

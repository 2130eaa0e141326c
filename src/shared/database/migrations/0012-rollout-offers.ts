import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

/**
 * Rollout offers: which device was offered which target while running which version. A report
 * counts toward a rollout's health only when its device was offered that target from the
 * version the report says it left (docs/rollouts.md, "Whose reports count"); without this
 * record, devices that were never offered a target (self-enrolled, or outside the cohort)
 * could pause its rollout with failure reports. One row per (device, target), the latest offer.
 */
export function offers0012(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  const key = engine === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createTable('rollout_offers')
        .addColumn('device_id', key, (c) => c.notNull())
        .addColumn('target_hash', 'text', (c) => c.notNull())
        .addColumn('from_hash', 'text', (c) => c.notNull())
        .addColumn('offered_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('rollout_offers_pk', ['device_id', 'target_hash'])
        .execute();
      // Retention deletes the offers no report can refer to any more.
      await db.schema.createIndex('rollout_offers_at').on('rollout_offers').column('offered_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('rollout_offers').execute();
    },
  };
}

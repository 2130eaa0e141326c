import { type Kysely, type Migration } from 'kysely';
import type { Engine } from '../schema.js';

/**
 * The webhooks' outbox (docs/operations.md, "Webhooks"): one row per (event, webhook), written
 * when the event happens and sent from here, so that an event survives a restart and a
 * receiver that is down. Times in Unix milliseconds: the backoff's first retry is seconds away.
 * The sender walks each webhook's pending rows in id order (in order per webhook).
 */
export function webhooks0010(engine: Engine): Migration {
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      let table = db.schema.createTable('webhook_outbox');
      table = engine === 'postgres'
        ? table.addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
        : table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await table
        .addColumn('webhook', 'text', (c) => c.notNull())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_at', big, (c) => c.notNull())
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('done_at', big)
        .execute();
      await db.schema.createIndex('webhook_outbox_queue').on('webhook_outbox').columns(['webhook', 'state', 'id']).execute();
      await db.schema.createIndex('webhook_outbox_done').on('webhook_outbox').column('done_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('webhook_outbox').execute();
    },
  };
}

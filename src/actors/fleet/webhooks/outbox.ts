import type { Kysely } from 'kysely';
import type { Database } from '../../../shared/database/schema.js';

// The outbox table's queries (the same on SQLite and PostgreSQL). One row per (event,
// webhook); a webhook's rows are sent in id order, one at a time, so a row that fails holds
// the ones behind it until it is delivered or given up. Each webhook has two lanes, told apart
// by the event type: the device events (`updater.device.*`, which a fleet can raise by the
// thousand) and the operator's own (tracks and rollouts); the sender serves the operator's
// lane first, so its events never wait behind a backlog of device events.

export type Lane = 'operator' | 'device';
const DEVICE_EVENTS = 'updater.device.%';

export function laneOf(type: string): Lane {
  return type.startsWith('updater.device.') ? 'device' : 'operator';
}

export interface OutboxRow {
  id: number;
  webhook: string;
  event_id: string;
  type: string;
  body: string;
  created_at: number;
  attempts: number;
  next_at: number;
}

export interface NewOutboxRow {
  webhook: string;
  event_id: string;
  type: string;
  body: string;
  created_at: number;
}

export async function enqueue(db: Kysely<Database>, rows: readonly NewOutboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('webhook_outbox')
    .values(rows.map((r) => ({ ...r, state: 'pending', attempts: 0, next_at: r.created_at })))
    .execute();
}

/** The oldest pending row of a webhook (of one lane, when given), due or not. */
export async function head(db: Kysely<Database>, webhook: string, lane?: Lane): Promise<OutboxRow | undefined> {
  let query = db.selectFrom('webhook_outbox')
    .select(['id', 'webhook', 'event_id', 'type', 'body', 'created_at', 'attempts', 'next_at'])
    .where('webhook', '=', webhook).where('state', '=', 'pending');
  if (lane) query = query.where('type', lane === 'device' ? 'like' : 'not like', DEVICE_EVENTS);
  const row = await query.orderBy('id').limit(1).executeTakeFirst();
  return row && { ...row, id: Number(row.id), created_at: Number(row.created_at), next_at: Number(row.next_at) };
}

export async function delivered(db: Kysely<Database>, id: number, status: number, nowMs: number): Promise<void> {
  await db.updateTable('webhook_outbox')
    .set((eb) => ({ state: 'delivered', attempts: eb('attempts', '+', 1), last_status: status, last_error: null, done_at: nowMs }))
    .where('id', '=', id).execute();
}

/** A failed attempt: retried at `nextAt`, or given up (`failed`) when there is none. */
export async function attemptFailed(db: Kysely<Database>, id: number, failure: { status: number | null; error: string }, nextAt: number | undefined, nowMs: number): Promise<void> {
  await db.updateTable('webhook_outbox')
    .set((eb) => ({
      attempts: eb('attempts', '+', 1),
      last_status: failure.status,
      last_error: failure.error,
      ...(nextAt === undefined ? { state: 'failed', done_at: nowMs } : { next_at: nextAt }),
    }))
    .where('id', '=', id).execute();
}

export interface QueueCounts {
  webhook: string;
  state: string;
  events: number;
  oldest: number | null;
  latest: number | null;
}

/** Per webhook and state: how many rows, the oldest event, and the last one done. */
export async function counts(db: Kysely<Database>): Promise<QueueCounts[]> {
  const rows = await db.selectFrom('webhook_outbox')
    .select(['webhook', 'state'])
    .select((eb) => [eb.fn.countAll<number>().as('events'), eb.fn.min('created_at').as('oldest'), eb.fn.max('done_at').as('latest')])
    .groupBy(['webhook', 'state'])
    .execute();
  return rows.map((r) => ({ webhook: r.webhook, state: r.state, events: Number(r.events), oldest: r.oldest === null ? null : Number(r.oldest), latest: r.latest === null ? null : Number(r.latest) }));
}

export interface RecentAttempt {
  id: number;
  webhook: string;
  event_id: string;
  type: string;
  state: string;
  created_at: number;
  attempts: number;
  next_at: number;
  last_status: number | null;
  last_error: string | null;
}

/** The newest rows that failed at least once (retrying or given up), for the console. */
export async function recentFailures(db: Kysely<Database>, limit: number): Promise<RecentAttempt[]> {
  const rows = await db.selectFrom('webhook_outbox')
    .select(['id', 'webhook', 'event_id', 'type', 'state', 'created_at', 'attempts', 'next_at', 'last_status', 'last_error'])
    .where('last_error', 'is not', null)
    .orderBy('id', 'desc').limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), created_at: Number(r.created_at), next_at: Number(r.next_at), last_status: r.last_status === null ? null : Number(r.last_status) }));
}

/** Delivered and given-up rows finished before `beforeMs` go; pending ones always stay. */
export async function prune(db: Kysely<Database>, beforeMs: number): Promise<number> {
  const result = await db.deleteFrom('webhook_outbox').where('state', '<>', 'pending').where('done_at', '<', beforeMs).executeTakeFirst();
  return Number(result.numDeletedRows);
}

import type { Kysely } from 'kysely';
import { Gauge, type Registry } from 'prom-client';
import type { TargetingIndex } from '../../../messages/targeting-index.js';
import type { Database } from '../../../shared/database/schema.js';
import type { Logger } from '../../../shared/logger.js';
import { LongPollPublisher } from '../../../shared/long-poll.js';
import type { TargetFilter } from '../../../shared/targeting/filter.js';
import { storedFilter } from './groups.js';

// The targeting index the front-ends judge group steps with (src/messages/targeting-index.ts):
// read from the database after every change made here (a tag, a group) and on a timer, which
// is how a change made on another cluster replica arrives (within CLUSTER_INDEX_RELOAD_MS of src/actors/fleet/index.ts). An
// operator's change returns once every front-end holds it (`changedHere`), so the next
// heartbeat is judged by it.

type Db = Kysely<Database>;

/** A tag entry's weight beside its texts (map slot, array, string headers). */
const ENTRY_BYTES = 96;

export class TargetingIndexFeed {
  private current: Omit<TargetingIndex, 'version'> = { groups: new Map(), tags: new Map(), leftOut: 0, bytes: 0 };
  private fingerprint = '';
  private warned = false;
  readonly publisher = new LongPollPublisher<'index', TargetingIndex>((version) => ({ version, ...this.current }));

  constructor(private readonly db: () => Db, private readonly budgetBytes: number, private readonly log: Logger) {}

  /** Reads the index again; front-ends get it when it differs from the one they hold. */
  async reload(): Promise<void> {
    const db = this.db();
    const [groupRows, tagRows] = await Promise.all([
      db.selectFrom('device_groups').select(['name', 'filter']).orderBy('name').execute(),
      db.selectFrom('device_tags').select(['device_id', 'tag']).orderBy('device_id').orderBy('tag').execute(),
    ]);
    const groups = new Map<string, TargetFilter>();
    let bytes = 0;
    for (const row of groupRows) {
      groups.set(row.name, storedFilter(row.filter));
      bytes += row.name.length + row.filter.length + ENTRY_BYTES;
    }
    const tags = new Map<string, string[]>();
    let leftOut = 0;
    let skipped: string | undefined;
    for (const row of tagRows) {
      if (row.device_id === skipped) continue;
      let list = tags.get(row.device_id);
      if (!list) {
        // Rows come by device id: a device past the budget is left out whole.
        if (bytes + row.device_id.length + ENTRY_BYTES > this.budgetBytes) {
          leftOut++;
          skipped = row.device_id;
          continue;
        }
        tags.set(row.device_id, (list = []));
        bytes += row.device_id.length + ENTRY_BYTES;
      }
      list.push(row.tag);
      bytes += row.tag.length + 16;
    }
    const fingerprint = `${JSON.stringify(groupRows)}\n${tagRows.length}\n${tagRows.map((r) => `${r.device_id}\t${r.tag}`).join('\n')}`;
    if (fingerprint === this.fingerprint) return;
    this.fingerprint = fingerprint;
    if (leftOut > 0 && !this.warned) {
      this.warned = true;
      this.log.warn({ left_out: leftOut, budget_bytes: this.budgetBytes }, 'tagged devices past fleet.targeting_index_mb are judged without their tags');
    }
    this.current = { groups, tags, leftOut, bytes };
    this.publisher.changed();
  }

  /** After a change made here: reloads, and returns once every front-end holds it. */
  async changedHere(): Promise<void> {
    await this.reload();
    await this.publisher.settled();
  }

  get leftOut(): number {
    return this.current.leftOut;
  }

  get bytes(): number {
    return this.current.bytes;
  }
}

export function registerIndexMetrics(registry: Registry, feed: TargetingIndexFeed): void {
  new Gauge({
    name: 'updater_targeting_index_left_out',
    help: 'Tagged devices left out of the targeting index for fleet.targeting_index_mb (judged without their tags)',
    registers: [registry],
    collect() {
      this.set(feed.leftOut);
    },
  });
}

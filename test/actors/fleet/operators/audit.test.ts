import t from 'tap';
import type { Kysely } from 'kysely';
import { AuditLog } from '../../../../src/actors/fleet/operators/audit.js';
import { OperatorTokenTable } from '../../../../src/actors/fleet/operators/tokens.js';
import type { AuditRecord } from '../../../../src/messages/operators.js';
import type { Database } from '../../../../src/shared/database/schema.js';
import { createLogger } from '../../../../src/shared/logger.js';
import { ENGINES, openTestDatabase } from '../../../helpers/databases.js';

// The fleet actor's audit log and token table over both engines: rows written in order and
// paged newest first, retention by age, rows kept while the database is away, and a token row
// with a role this code does not know granting nothing.

const log = createLogger('test', 'silent');

function row(at: number, path: string): AuditRecord {
  return { at, token_id: 'config', token_name: 'config', role: 'admin', method: 'POST', path, status: 200, detail: '' };
}

for (const engine of ENGINES) {
  t.test(`${engine}: the audit log pages newest first and retention deletes by age`, async (t) => {
    const db = await openTestDatabase(t, engine);
    const audit = new AuditLog(() => db, log);
    audit.append(Array.from({ length: 25 }, (_, i) => row(1000 + i, `/admin/p${i}`)));
    const seen: string[] = [];
    let after: number | undefined;
    for (;;) {
      const page = await audit.list({ limit: 10, ...(after !== undefined ? { after } : {}) });
      seen.push(...page.entries.map((e) => e.path));
      if (page.next === null) break;
      after = page.next;
    }
    t.same(seen, Array.from({ length: 25 }, (_, i) => `/admin/p${24 - i}`), 'every row once, newest first');
    t.equal(await audit.prune(1010), 10, 'the ten older than the cut');
    t.equal((await audit.list({ limit: 100 })).entries.length, 15);
  });

  t.test(`${engine}: rows wait while the database is away, and are written once it is back`, async (t) => {
    const db = await openTestDatabase(t, engine);
    let away = true;
    const audit = new AuditLog(() => {
      if (away) throw new Error('database away');
      return db;
    }, log);
    t.teardown(() => audit.close());
    audit.append([row(1, '/admin/a'), row(2, '/admin/b')]);
    await audit.settled();
    away = false;
    const entries = await (async () => {
      for (let i = 0; i < 50; i++) {
        const page = await audit.list({ limit: 10 });
        if (page.entries.length === 2) return page.entries;
        await new Promise((r) => setTimeout(r, 100));
      }
      return [];
    })();
    t.same(entries.map((e) => e.path), ['/admin/b', '/admin/a'], 'written by the retry, in order');
  });

  t.test(`${engine}: a token row with an unknown role grants nothing`, async (t) => {
    const db: Kysely<Database> = await openTestDatabase(t, engine);
    await db.insertInto('operator_tokens').values({ id: 'aaaaaaaaaaaaaaaa', name: 'edited', role: 'root', hash: '00'.repeat(32), created_at: 1, expires_at: null }).execute();
    const table = new OperatorTokenTable(() => db, engine === 'postgres', log);
    const snapshot = await table.snapshot(null);
    t.same(snapshot?.tokens, [], 'left out of the front-end\'s table');
    t.same(await table.list(), []);
    t.equal(await table.snapshot(snapshot!.version), null, 'unchanged: nothing to send');
    await table.close();
  });
}

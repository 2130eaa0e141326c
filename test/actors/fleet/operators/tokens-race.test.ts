import { randomBytes } from 'node:crypto';
import t from 'tap';
import { OperatorTokenTable } from '../../../../src/actors/fleet/operators/tokens.js';
import { MAX_OPERATOR_TOKENS, type OperatorTokenEntry } from '../../../../src/messages/operators.js';
import { createLogger } from '../../../../src/shared/logger.js';
import { ENGINES, openTestReplicas } from '../../../helpers/databases.js';
import { outcomes } from '../../../helpers/races.js';

// POST /admin/tokens from many operators at once, as a cluster's replicas take them: each
// replica's fleet actor has its own token table and pool on the one PostgreSQL database, and
// at READ COMMITTED two creations both counted 999 tokens before either inserted. The cap holds
// whatever replica takes the request.

const log = createLogger('test', 'silent');
const REPLICAS = 3;
const ROUNDS = 5;

const entry = (id: string): OperatorTokenEntry => ({ id, name: id, role: 'read', hash: randomBytes(32).toString('hex'), created_at: 1_800_000_000, expires_at: null });

for (const engine of ENGINES) {
  t.test(`${engine}: concurrent creations stop at ${MAX_OPERATOR_TOKENS} tokens`, async (t) => {
    const dbs = await openTestReplicas(t, engine, REPLICAS, 'updater-tokens-race-');
    const tables = dbs.map((db) => new OperatorTokenTable(() => db, false, log));
    for (const table of tables) {
      await table.start('');
      t.teardown(() => table.close());
    }
    const room = 5;
    const existing = Array.from({ length: MAX_OPERATOR_TOKENS - room }, (_, i) => entry(`old-${i}`));
    for (let i = 0; i < existing.length; i += 200) await dbs[0]!.insertInto('operator_tokens').values(existing.slice(i, i + 200)).execute();
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => tables[i % tables.length]!.create(entry(`new-${round}-${i}`))));
      t.same(outcomes(results), { 200: room, '409 TOO_MANY_TOKENS': 40 - room }, `round ${round}: ${room} created, the rest refused at the cap`);
      const stored = await tables[0]!.list();
      t.equal(stored.length, MAX_OPERATOR_TOKENS, `round ${round}: exactly ${MAX_OPERATOR_TOKENS} tokens stored`);
      for (const token of stored.filter((s) => s.id.startsWith('new-'))) await tables[0]!.revoke(token.id);
    }
  });
}

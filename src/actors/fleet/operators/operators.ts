import type { FleetApi } from '../../../messages/fleet.js';
import { UpdaterError } from '../../../shared/errors.js';
import type { ActorContext } from '../../runtime.js';
import type { FleetDatabase } from '../database.js';
import type { Schedule } from '../schedule.js';
import { AuditLog, auditWriteError } from './audit.js';
import { OperatorTokenTable } from './tokens.js';

// What the fleet actor keeps for operators (docs/operations.md, "Authentication"): operator
// tokens as hashes (tokens.ts) and the audit log (audit.ts), read when the database is open
// (or, if it is not yet, whenever the front-end asks for the table).

type OperatorsApi = Pick<FleetApi, 'createToken' | 'listTokens' | 'revokeToken' | 'operatorTokens' | 'audit' | 'auditBegin' | 'auditEnd' | 'listAudit'>;

export interface Operators {
  api: OperatorsApi;
  /** Waits for the audit rows in flight, then closes the table and the tokens' listener. */
  close(): Promise<void>;
}

export async function startOperators(ctx: ActorContext, database: FleetDatabase, schedule: Schedule): Promise<Operators> {
  const db = () => database.db();
  const tokens = new OperatorTokenTable(db, ctx.config.cluster, ctx.log);
  await tokens.start(ctx.config.database);
  const audit = new AuditLog(db, ctx.log);
  const { auditMaxAgeMs } = ctx.config.admin;
  if (auditMaxAgeMs > 0) {
    schedule.every(ctx.config.retention.intervalMs, 'audit retention', async () => {
      if (!database.isOpen) return;
      const removed = await audit.prune(Math.floor((Date.now() - auditMaxAgeMs) / 1000));
      if (removed > 0) ctx.log.info({ removed }, 'audit retention done');
    });
  }
  return {
    api: {
      createToken: (entry) => tokens.create(entry),
      listTokens: () => tokens.list(),
      revokeToken: (id) => tokens.revoke(id),
      operatorTokens: (known) => tokens.snapshot(known),
      audit(records) {
        if (!schedule.stopped) audit.append(records);
      },
      auditBegin(record) {
        if (schedule.stopped) return Promise.reject(new UpdaterError('SHUTTING_DOWN'));
        // A change does not wait for the retry timer: the disk may have come back a moment ago.
        if (!database.isOpen) return database.reopen().then(() => audit.begin(record), () => Promise.reject(auditWriteError(database.openError)));
        return audit.begin(record);
      },
      auditEnd(id, status, detail) {
        if (!schedule.stopped) audit.end(id, status, detail);
      },
      listAudit: (query) => audit.list(query),
    },
    async close() {
      await audit.settled();
      audit.close();
      await tokens.close();
    },
  };
}

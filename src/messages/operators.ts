import type { Role } from '../shared/admin-roles.js';

// The fleet actor's operator calls (docs/operations.md): operator tokens, stored as hashes only,
// and the audit log. The HTTP front-end checks tokens against a replica of the table it pulls
// from here; the fleet actor keeps that table current across a cluster (LISTEN/NOTIFY).

/** A token as stored and listed: never its secret. Times are Unix seconds. */
export interface OperatorTokenView {
  id: string;
  name: string;
  role: Role;
  created_at: number;
  expires_at: number | null;
}

/** What the HTTP front-end checks a presented token against: the SHA-256 of the whole token, hex. */
export interface OperatorTokenEntry extends OperatorTokenView {
  hash: string;
}

/** The table as the front-end replicates it; `version` changes whenever the table does. */
export interface OperatorTokenSnapshot {
  version: string;
  tokens: OperatorTokenEntry[];
}

/** One audit row as written by the front-end (the fleet actor adds `id` and keeps `at`). */
export interface AuditRecord {
  /** Unix seconds. */
  at: number;
  token_id: string | null;
  token_name: string | null;
  role: Role | null;
  method: string;
  path: string;
  status: number;
  detail: string;
}

export interface AuditEntry extends AuditRecord {
  id: number;
}

export interface AuditQuery {
  readonly limit: number;
  /** Only entries with a smaller id (the `next` of the previous page). */
  readonly after?: number;
}

export interface AuditPage {
  entries: AuditEntry[];
  /** The `after` of the next page, or null when this page was the last. */
  next: number | null;
}

/** At most this many operator tokens are stored; more is TOO_MANY_TOKENS. */
export const MAX_OPERATOR_TOKENS = 1000;

export interface OperatorsApi {
  /** Stores a new token (its hash only); TOO_MANY_TOKENS past the cap. */
  createToken(entry: OperatorTokenEntry): Promise<OperatorTokenView>;
  listTokens(): Promise<OperatorTokenView[]>;
  /** Deletes the token on every replica; null when there is none with that id. */
  revokeToken(id: string): Promise<OperatorTokenView | null>;
  /** The table when its version differs from `known`, else null. */
  operatorTokens(known: string | null): Promise<OperatorTokenSnapshot | null>;
  /** Fire-and-forget: queued and written in order; a listing waits for what is queued. */
  audit(records: readonly AuditRecord[]): void;
  /** A change's row, committed before the change is made (status 0 until auditEnd); its id. */
  auditBegin(record: AuditRecord): Promise<number>;
  /** Fire-and-forget: the answer to a begun change. */
  auditEnd(id: number, status: number, detail: string): void;
  listAudit(query: AuditQuery): Promise<AuditPage>;
}

export const OPERATORS_DEADLINES_MS = {
  createToken: 10_000,
  listTokens: 10_000,
  revokeToken: 10_000,
  operatorTokens: 5_000,
  audit: 5_000,
  auditBegin: 10_000,
  auditEnd: 5_000,
  listAudit: 10_000,
} as const;

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { OperatorTokenEntry, OperatorTokenSnapshot } from '../../../messages/operators.js';
import type { Role } from '../../../shared/admin-roles.js';
import { bearerToken } from '../../../shared/bearer.js';
import type { Logger } from '../../../shared/logger.js';
import { digest, type AdminAuth, type AuthOutcome } from './config-token.js';

// Who is calling an admin route (docs/operations.md, "Tokens and roles"): the configured token
// (role admin, id and name "config") or an operator token from the fleet database, which this
// front-end replicates in memory so that the check stays synchronous and never waits for the
// database. Any failure, whatever its cause (no header, wrong token, revoked, expired), takes
// from the one global failure bucket: 401, then 429.
//
// An operator token reads `upd_<id: 16 hex>_<secret: 43 base64url>`. The id only says which row
// to compare with: the SHA-256 of the whole token is compared with the stored one in constant
// time, and an id that matches no row is compared with a random digest, so the time does not
// say whether the id exists.

export interface Principal {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly expiresAt: number | null;
}

export type Identification =
  | { readonly principal: Principal }
  | { readonly refused: Exclude<AuthOutcome, 'ok'>; readonly detail: string };

export const CONFIG_PRINCIPAL: Principal = { id: 'config', name: 'config', role: 'admin', expiresAt: null };

const OPERATOR_TOKEN = /^upd_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

/** A new operator token and its id. */
export function newOperatorToken(): { id: string; token: string } {
  const id = randomBytes(8).toString('hex');
  return { id, token: `upd_${id}_${randomBytes(32).toString('base64url')}` };
}

/** The stored form of a token: SHA-256, hex. */
export function tokenHash(token: string): string {
  return digest(token).toString('hex');
}

export class OperatorAuth {
  private tokens = new Map<string, OperatorTokenEntry>();
  /** The version of the table held, as the fleet actor named it; null before the first pull. */
  version: string | null = null;
  /** Compared with when the id is unknown, so an unknown id costs the time of a known one. */
  private readonly decoy = randomBytes(32);

  constructor(
    private readonly configured: AdminAuth,
    private readonly now: () => number = Date.now,
    /** The comparison; a test passes a counting wrapper to see that every path compares. */
    private readonly equal: (a: Buffer, b: Buffer) => boolean = timingSafeEqual,
  ) {}

  identify(authorization: string): Identification {
    if (this.configured.matches(authorization)) return { principal: CONFIG_PRINCIPAL };
    const presented = bearerToken(authorization) ?? '';
    const id = OPERATOR_TOKEN.exec(presented)?.[1];
    // Whatever was presented is hashed and compared once, so a malformed token, an unknown id
    // and a wrong secret take the same steps.
    const entry = id === undefined ? undefined : this.tokens.get(id);
    const expected = entry ? Buffer.from(entry.hash, 'hex') : this.decoy;
    const equal = this.equal(digest(presented), expected.length === 32 ? expected : this.decoy);
    if (equal && entry) {
      if (entry.expires_at !== null && entry.expires_at * 1000 <= this.now()) {
        return { refused: this.configured.refuse(), detail: `token ${entry.id} (${entry.name}) has expired` };
      }
      return { principal: { id: entry.id, name: entry.name, role: entry.role, expiresAt: entry.expires_at } };
    }
    return { refused: this.configured.refuse(), detail: authorization === '' ? 'no token' : 'unknown, revoked or malformed token' };
  }

  /** Replaces the table with the fleet actor's. */
  replace(snapshot: OperatorTokenSnapshot): void {
    this.tokens = new Map(snapshot.tokens.map((t) => [t.id, t]));
    this.version = snapshot.version;
  }

  /** A change made through this front-end, applied at once rather than at the next pull. */
  added(entry: OperatorTokenEntry): void {
    this.tokens.set(entry.id, entry);
  }

  removed(id: string): void {
    this.tokens.delete(id);
  }
}

/** How often the front-end asks the fleet actor whether the table changed. */
export const TOKEN_PULL_MS = 250;

/** Keeps `auth` in step with the fleet actor's table; the returned function stops it. */
export function syncOperatorTokens(auth: OperatorAuth, pull: (known: string | null) => Promise<OperatorTokenSnapshot | null>, log: Logger): () => void {
  let busy = false;
  let failing = false;
  const tick = () => {
    if (busy) return;
    busy = true;
    pull(auth.version).then((snapshot) => {
      if (snapshot) auth.replace(snapshot);
      if (failing) log.info('operator tokens: in step with the database again');
      failing = false;
    }, (err) => {
      if (!failing) log.warn({ err }, 'operator tokens: cannot read the table; keeping the last one');
      failing = true;
    }).finally(() => (busy = false));
  };
  tick();
  const timer = setInterval(tick, TOKEN_PULL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

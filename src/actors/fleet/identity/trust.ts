import { randomUUID } from 'node:crypto';
import type { DeviceTrust } from '../../../shared/device-identity/token.js';

// What the front-ends check device tokens with: the MAC key and the revocations, with a version
// that changes whenever either does. Front-ends ask with the version they hold and the answer
// waits until there is a newer one (a long poll), so a reject reaches them as soon as this actor
// learns of it: at once on this replica, within one poll of the database on the others.

/** How long a front-end's question waits for a change before it is answered with the same version. */
const WAIT_MS = 20_000;

export class TrustState {
  private readonly epoch = randomUUID().slice(0, 8);
  private generation = 0;
  private revoked = new Map<string, number>();
  private certificatesRefused = new Set<string>();
  private waiters = new Set<() => void>();

  constructor(private readonly key: Uint8Array) {}

  get version(): string {
    return `${this.epoch}.${this.generation}`;
  }

  snapshot(): DeviceTrust {
    return { version: this.version, key: this.key, revoked: [...this.revoked], certificatesRefused: [...this.certificatesRefused] };
  }

  /** The revocation of `revokedAt` for this id hash is known now; true when it changed anything. */
  revoke(idHash: string, revokedAt: number): boolean {
    const refusedBefore = this.certificatesRefused.has(idHash);
    this.certificatesRefused.add(idHash);
    if ((this.revoked.get(idHash) ?? -1) >= revokedAt) {
      if (!refusedBefore) this.changed();
      return !refusedBefore;
    }
    this.revoked.set(idHash, revokedAt);
    this.changed();
    return true;
  }

  /** An accepted device's certificate is let in again at once (its tokens from before stay refused). */
  admit(idHash: string): void {
    if (this.certificatesRefused.delete(idHash)) this.changed();
  }

  /** Replaces the sets with what the database holds (changes from other replicas, expired ones gone). */
  replace(rows: readonly (readonly [string, number])[], certificatesRefused: readonly string[]): void {
    const next = new Map(rows);
    const refused = new Set(certificatesRefused);
    const sameRevoked = next.size === this.revoked.size && [...next].every(([hash, at]) => this.revoked.get(hash) === at);
    const sameRefused = refused.size === this.certificatesRefused.size && [...refused].every((hash) => this.certificatesRefused.has(hash));
    if (sameRevoked && sameRefused) return;
    this.revoked = next;
    this.certificatesRefused = refused;
    this.changed();
  }

  /** The second a device's tokens were last revoked, or undefined (no revocation is known). */
  revokedAt(idHash: string): number | undefined {
    return this.revoked.get(idHash);
  }

  get anyRevoked(): boolean {
    return this.revoked.size > 0;
  }

  /** When a device's tokens issued now would still fall under its revocation, the second after it. */
  issuedAt(idHash: string, now: number): number {
    const revokedAt = this.revoked.get(idHash);
    return revokedAt !== undefined && revokedAt >= now ? revokedAt + 1 : now;
  }

  /** Answers at once when `known` is not the current version, else at the next change or after WAIT_MS. */
  async next(known: string): Promise<DeviceTrust> {
    if (known !== this.version) return this.snapshot();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, WAIT_MS);
      const waiters = this.waiters;
      function done() {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      }
      waiters.add(done);
    });
    return this.snapshot();
  }

  /** Lets every waiting front-end go (drain). */
  release(): void {
    for (const done of [...this.waiters]) done();
  }

  private changed(): void {
    this.generation++;
    this.release();
  }
}

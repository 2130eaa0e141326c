import { randomUUID } from 'node:crypto';
import type { DeviceTrust } from '../../../shared/device-identity/token.js';

// What the front-ends check device tokens with: the MAC key and the revocations, with a version
// that changes whenever either does. Front-ends ask with the version they hold and the answer
// waits until there is a newer one (a long poll), so a reject reaches them as soon as this actor
// learns of it: at once on this replica, within one poll of the database on the others.

/** How long a front-end's question waits for a change before it is answered with the same version. */
const WAIT_MS = 20_000;

/** What this replica changed in the sets, to be applied again over a read that may predate it. */
type LocalChange = (revoked: Map<string, number>, certificatesRefused: Set<string>) => void;

export class TrustState {
  private readonly epoch = randomUUID().slice(0, 8);
  private generation = 0;
  private revoked = new Map<string, number>();
  private certificatesRefused = new Set<string>();
  private waiters = new Set<() => void>();
  /** Local changes made while a read of the database was under way, numbered in order. */
  private localChanges: { seq: number; change: LocalChange }[] = [];
  private changeSeq = 0;
  /** The change number each read under way began at. */
  private readsUnderWay: number[] = [];

  constructor(private readonly key: Uint8Array) {}

  get version(): string {
    return `${this.epoch}.${this.generation}`;
  }

  snapshot(): DeviceTrust {
    return { version: this.version, key: this.key, revoked: [...this.revoked], certificatesRefused: [...this.certificatesRefused] };
  }

  /** The revocation of `revokedAt` for this id hash is known now; true when it changed anything. */
  revoke(idHash: string, revokedAt: number): boolean {
    this.keepForReads((revoked, refused) => {
      refused.add(idHash);
      if ((revoked.get(idHash) ?? -1) < revokedAt) revoked.set(idHash, revokedAt);
    });
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
    this.keepForReads((_revoked, refused) => refused.delete(idHash));
    if (this.certificatesRefused.delete(idHash)) this.changed();
  }

  /**
   * Replaces the sets with what `read` finds in the database (changes from other replicas,
   * expired ones gone). A reject or an admit made here while the read was under way may be
   * missing from what it found (the read began before its write committed): such changes are
   * applied again over the result, or the read would undo a reject on this replica until the
   * next one.
   */
  async refresh(read: () => Promise<[rows: readonly (readonly [string, number])[], certificatesRefused: readonly string[]]>): Promise<void> {
    const began = this.changeSeq;
    this.readsUnderWay.push(began);
    try {
      const [rows, certificatesRefused] = await read();
      const next = new Map(rows);
      const refused = new Set(certificatesRefused);
      for (const { seq, change } of this.localChanges) if (seq > began) change(next, refused);
      this.replace(next, refused);
    } finally {
      this.readsUnderWay.splice(this.readsUnderWay.indexOf(began), 1);
      const oldest = Math.min(...this.readsUnderWay);
      this.localChanges = this.localChanges.filter((c) => c.seq > oldest);
    }
  }

  private keepForReads(change: LocalChange): void {
    this.changeSeq++;
    if (this.readsUnderWay.length > 0) this.localChanges.push({ seq: this.changeSeq, change });
  }

  private replace(next: Map<string, number>, refused: Set<string>): void {
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

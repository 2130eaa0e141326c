import { createHash, timingSafeEqual } from 'node:crypto';
import { bearerToken } from '../../../shared/bearer.js';

// Admin authentication (spec part 5): a static Bearer token compared in constant time, and one
// global token bucket that only failed attempts drain. A request with the valid token never
// touches the bucket, so an attacker hammering with bad tokens cannot lock the operator out.

/**
 * Token bucket of `capacity` tokens refilled at `refillPerSecond`, shared by every client
 * address (spec: one global bucket). Pure: the clock is passed in, so it is tested without
 * waiting.
 */
export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(readonly capacity: number, readonly refillPerSecond: number, now: number) {
    this.tokens = capacity;
    this.updatedAt = now;
  }

  /** Takes one token; false when the bucket is empty. */
  take(now: number): boolean {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  available(now: number): number {
    this.refill(now);
    return Math.floor(this.tokens);
  }

  private refill(now: number): void {
    const elapsedSeconds = Math.max(0, now - this.updatedAt) / 1000;
    this.tokens = Math.min(this.capacity, this.tokens + elapsedSeconds * this.refillPerSecond);
    this.updatedAt = now;
  }
}

export type AuthOutcome = 'ok' | 'unauthorized' | 'throttled';

export class AdminAuth {
  // Only the digest of the token is kept: both sides are hashed to 32 bytes before the
  // comparison, so timingSafeEqual never sees buffers of different lengths (it would throw)
  // and the time taken says nothing about the token's length.
  private readonly expected: Buffer;
  private readonly bucket: TokenBucket;

  constructor(token: string, burst: number, refillPerSecond: number, private readonly clock: () => number = () => performance.now()) {
    this.expected = digest(token);
    this.bucket = new TokenBucket(burst, refillPerSecond, clock());
  }

  /** Decides on the raw `Authorization` header value ('' when absent). */
  check(authorization: string): AuthOutcome {
    if (this.matches(authorization)) return 'ok';
    return this.refuse();
  }

  /** A failed authentication (any token, principal.ts): takes one from the bucket, or finds it empty. */
  refuse(): Exclude<AuthOutcome, 'ok'> {
    return this.bucket.take(this.clock()) ? 'unauthorized' : 'throttled';
  }

  /** Whether the header carries the configured token (constant time). */
  matches(authorization: string): boolean {
    const token = bearerToken(authorization);
    // A malformed header is compared too, against an empty token, so it costs the same time.
    const presented = digest(token ?? '');
    return timingSafeEqual(presented, this.expected) && token !== undefined;
  }
}

export function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

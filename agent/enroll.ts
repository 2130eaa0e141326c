import { UpdaterError, isUpdaterError } from '../src/shared/errors.js';
import type { Logger } from '../src/shared/logger.js';
import type { HeartbeatWire, ReportWire } from '../src/shared/wire/keys.js';
import type { DeviceIdentity } from './identity.js';
import type { DownloadSink, Transport } from './transport.js';

// A transport that carries the device's token (devices.auth on the server). Before a request it
// makes sure a live token is at hand, authenticating over this same transport when not; a
// request answered 401 / 4.01 authenticates once more and goes again. Failover stays above it
// (failover.ts): an operation on the fallback transport authenticates over the fallback.

/** What a transport offers to authenticate: POST /auth, and a slot for the token it sends. */
export interface Authenticating extends Transport {
  token: string | undefined;
  authenticate(request: Record<string, unknown>, timeoutMs: number): Promise<{ token?: unknown; expires_in?: unknown; state?: unknown; retry_after?: unknown }>;
}

/** A refusal that a fresh token may cure: 401 over HTTP, 4.01 over CoAP. */
function tokenRefused(err: unknown): boolean {
  const status = isUpdaterError(err) ? err.details?.status : undefined;
  return isUpdaterError(err) && err.code === 'AGENT_REQUEST_REFUSED' && (status === 401 || status === '4.01');
}

export class EnrolledTransport implements Transport {
  readonly name;

  constructor(private readonly inner: Authenticating, private readonly identity: DeviceIdentity, private readonly timeoutMs: number, private readonly log: Logger) {
    this.name = inner.name;
  }

  heartbeat(body: HeartbeatWire, timeoutMs: number): Promise<unknown> {
    return this.withToken(() => this.inner.heartbeat(body, timeoutMs));
  }

  report(report: ReportWire, timeoutMs: number): Promise<void> {
    return this.withToken(() => this.inner.report(report, timeoutMs));
  }

  download(endpoint: string, offset: number, expectedSize: number, sink: DownloadSink, signal: AbortSignal): Promise<void> {
    // A refused download is refused before its first byte: going again starts from the same offset.
    return this.withToken(() => this.inner.download(endpoint, offset, expectedSize, sink, signal));
  }

  /** GET /keys is public: it needs no token. */
  keys(timeoutMs: number): Promise<unknown> {
    return this.inner.keys(timeoutMs);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private async withToken<T>(operation: () => Promise<T>): Promise<T> {
    this.inner.token = this.identity.token ?? (await this.enroll());
    try {
      return await operation();
    } catch (err) {
      if (!tokenRefused(err)) throw err;
      this.log.info({ transport: this.name, reason: (err as Error).message }, 'device token refused; authenticating again');
      await this.identity.forget();
      this.inner.token = await this.enroll();
      return operation();
    }
  }

  /** POST /auth; the token, or AGENT_ENROLLMENT_PENDING with the server's retry_after. */
  private async enroll(): Promise<string> {
    const request = await this.identity.nextRequest();
    const answer = await this.inner.authenticate({
      device_id: request.deviceId, public_key: request.publicKey, timestamp: request.timestamp, signature: request.signature,
    }, this.timeoutMs);
    if (typeof answer.token === 'string' && answer.token.length > 0 && answer.token.length <= 64 && typeof answer.expires_in === 'number' && answer.expires_in > 0) {
      await this.identity.keep(answer.token, answer.expires_in);
      this.log.info({ transport: this.name, expires_in: answer.expires_in }, 'device authenticated');
      return answer.token;
    }
    if (answer.state === 'pending') {
      // Whole seconds, as the protocol has them: a fraction (or NaN, or Infinity over CBOR) would make the loop spin.
      const retryAfter = Number.isSafeInteger(answer.retry_after) && (answer.retry_after as number) > 0 ? answer.retry_after as number : 60;
      throw new UpdaterError('AGENT_ENROLLMENT_PENDING', `the device key ${request.publicKey} waits for an operator to accept it; asking again in ${retryAfter} s`, { retryAfterSeconds: retryAfter });
    }
    throw new UpdaterError('AGENT_REQUEST_REFUSED', `${this.name}: the auth answer has neither a token nor a pending state`);
  }
}

/**
 * The server's retry_after of a pending enrollment, in milliseconds, but never longer than
 * `intervalMs` (as the retry_after of a heartbeat): a timer past 2^31-1 ms fires after 1 ms, so
 * a server's "35 days" would have the agent ask a thousand times a second. Undefined for another error.
 */
export function enrollmentRetryMs(err: unknown, intervalMs: number): number | undefined {
  if (!isUpdaterError(err) || err.code !== 'AGENT_ENROLLMENT_PENDING') return undefined;
  const seconds = err.details?.retryAfterSeconds;
  return typeof seconds === 'number' ? Math.min(seconds * 1000, intervalMs) : undefined;
}

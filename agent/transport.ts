import { UpdaterError, isUpdaterError } from '../src/shared/errors.js';
import type { TransportName } from './config.js';
import type { HeartbeatWire, ReportWire } from '../src/shared/wire/keys.js';

// The agent talks to the server through this interface only, so HTTP and CoAP are
// interchangeable and failover (docs/agent.md, "Transports and retry") is written once, above the transports.

/** Where downloaded bytes go; the download module makes them durable. */
export interface DownloadSink {
  /** The server answered from `offset` (the requested one, or 0 when it ignored the range). */
  begin(offset: number): Promise<void>;
  write(chunk: Uint8Array): Promise<void>;
}

export interface Transport {
  readonly name: TransportName;
  /** Resolves with the decoded manifest of a 200 answer; throws an UpdaterError otherwise. */
  heartbeat(body: HeartbeatWire, timeoutMs: number): Promise<unknown>;
  report(report: ReportWire, timeoutMs: number): Promise<void>;
  /** `GET /keys`: the decoded certificate of the server's signing key; throws an UpdaterError otherwise. */
  keys(timeoutMs: number): Promise<unknown>;
  /**
   * Streams `endpoint` from byte `offset` into `sink`. Resolves when the resource is
   * complete (the sink has seen its last byte); `signal` aborts it.
   */
  download(endpoint: string, offset: number, expectedSize: number, sink: DownloadSink, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export function transportError(transport: TransportName, what: string, cause: unknown): UpdaterError {
  const reason = cause instanceof Error ? ((cause.cause as Error | undefined)?.message ?? cause.message) : String(cause);
  return new UpdaterError('AGENT_TRANSPORT_FAILED', `${transport}: ${what}: ${reason}`, { transport });
}

/** A transport error is one the other transport might not have: worth a fallback attempt. */
export function isTransportError(err: unknown): boolean {
  return isUpdaterError(err) && err.code === 'AGENT_TRANSPORT_FAILED';
}

import type { Logger } from '../src/shared/logger.js';
import { isTransportError, type Transport } from './transport.js';

/**
 * Spec 3.5: an operation that fails with a transport error gets exactly one attempt on the
 * other transport. Nothing is remembered: every operation starts at the primary again.
 */
export class Transports {
  constructor(readonly primary: Transport, readonly fallback: Transport | undefined, private readonly log: Logger) {}

  async run<T>(what: string, operation: (transport: Transport) => Promise<T>): Promise<T> {
    try {
      return await operation(this.primary);
    } catch (err) {
      if (!this.fallback || !isTransportError(err)) throw err;
      this.log.warn({ what, transport: this.primary.name, fallback: this.fallback.name, reason: (err as Error).message },
        'transport error; one attempt on the fallback transport');
      return operation(this.fallback);
    }
  }

  async close(): Promise<void> {
    await this.primary.close();
    await this.fallback?.close();
  }
}

// Admission for the CoAP front-end. UDP has no backpressure: a burst arrives as fast as it is
// sent, and every request admitted holds a cross-thread call and a response until answered.
// Beyond `limit` requests under way the front-end answers 5.03 at once (cheap, and cached
// for duplicates like any answer) instead of queueing without bound.

export class InFlight {
  private current = 0;
  private waiters: (() => void)[] = [];

  constructor(readonly limit: number) {}

  get count(): number {
    return this.current;
  }

  tryEnter(): boolean {
    if (this.current >= this.limit) return false;
    this.current++;
    return true;
  }

  leave(): void {
    this.current = Math.max(0, this.current - 1);
    if (this.current === 0) for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves when nothing is under way, or after `timeoutMs` regardless. */
  idle(timeoutMs: number): Promise<void> {
    if (this.current === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

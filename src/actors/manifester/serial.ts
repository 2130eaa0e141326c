// Ordering for track changes. Each track's changes run one after another in the order they
// were asked for (two publishes of the same track never land out of order), while different
// tracks copy their binaries in parallel; the table change and the state-file write that
// records it run under one global lock, so the file always follows the table in order.

export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

export class KeyedQueues {
  private readonly queues = new Map<string, { queue: SerialQueue; pending: number }>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let entry = this.queues.get(key);
    if (!entry) {
      entry = { queue: new SerialQueue(), pending: 0 };
      this.queues.set(key, entry);
    }
    const held = entry;
    held.pending++;
    return held.queue.run(task).finally(() => {
      // Forget idle queues, so keys that come and go do not accumulate.
      if (--held.pending === 0) this.queues.delete(key);
    });
  }
}

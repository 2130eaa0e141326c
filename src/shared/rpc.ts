import type { MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { UpdaterError, deserializeError, serializeError, type SerializedError } from './errors.js';

// Comlink's default throw handler keeps only message/name/stack; ours keeps the stable
// `code` so callers branch on err.code across threads. Installed once per thread.
let installed = false;
function installErrorHandler(): void {
  if (installed) return;
  installed = true;
  const builtin = Comlink.transferHandlers.get('throw')!;
  Comlink.transferHandlers.set('throw', {
    canHandle: builtin.canHandle,
    serialize: ({ value }: { value: unknown }) => [serializeError(value), []],
    deserialize: (data: SerializedError) => {
      throw deserializeError(data);
    },
  } as Comlink.TransferHandler<unknown, SerializedError>);
}

export type Remote<T> = Comlink.Remote<T>;

export function exposeOn(api: object, port: MessagePort): void {
  installErrorHandler();
  Comlink.expose(api, nodeEndpoint(port as never));
}

export function wrapPort<T>(port: MessagePort): Remote<T> {
  installErrorHandler();
  return Comlink.wrap<T>(nodeEndpoint(port as never));
}

export function releaseRemote(remote: Remote<unknown>): void {
  try {
    remote[Comlink.releaseProxy]();
  } catch {
    // Already released or the port is gone: nothing left to free.
  }
}

type Abandon = (err: UpdaterError) => void;

/**
 * Rejects with ACTOR_TIMEOUT when a cross-actor call does not settle in time. `open`: the
 * calls of the same link still waiting, which its end rejects at once (withDeadlines).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string, open?: Set<Abandon>): Promise<T> {
  let timer: NodeJS.Timeout;
  let abandon!: Abandon;
  const timeout = new Promise<never>((_, reject) => {
    abandon = reject;
    timer = setTimeout(() => reject(new UpdaterError('ACTOR_TIMEOUT', `${what} did not answer within ${ms} ms`)), ms);
  });
  open?.add(abandon);
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
    open?.delete(abandon);
  });
}

/** The methods of an API (what a peer may call). */
export type MethodsOf<Api> = { [K in keyof Api]-?: Api[K] extends (...args: never[]) => unknown ? K : never }[keyof Api];

/**
 * How long a caller waits for each call of an API, in milliseconds: stated once, beside the
 * API in src/messages/<actor>.ts, for every method (the compiler refuses a table that misses
 * one). A call that takes longer rejects with ACTOR_TIMEOUT.
 */
export type Deadlines<Api> = { readonly [K in MethodsOf<Api>]: number };

/** A peer as a caller sees it: each method answers a promise that rejects after its deadline. */
export type Peer<Api> = {
  readonly [K in MethodsOf<Api>]: Api[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
};

/**
 * A remote whose every method rejects with ACTOR_TIMEOUT after its own deadline. Built once
 * per connection: one function per method, so a call costs no more than before.
 *
 * With the link's `port`: once it closes (the thread at its other end ended, or the link was
 * replaced), the calls still waiting and every later one reject at once with
 * ACTOR_UNAVAILABLE. Their answers can no longer come, and each would otherwise hold its
 * caller (an operator's request, a device's) for its whole deadline.
 */
export function withDeadlines<Api>(remote: Remote<Api>, deadlines: Deadlines<Api>, who: string, port?: MessagePort): Peer<Api> {
  const methods = remote as unknown as Record<string, (...args: unknown[]) => unknown>;
  const open = new Set<Abandon>();
  let gone: UpdaterError | undefined;
  port?.once('close', () => {
    gone = new UpdaterError('ACTOR_UNAVAILABLE', `${who} went away before it answered`);
    for (const abandon of open) abandon(gone);
    open.clear();
  });
  return Object.fromEntries(Object.entries(deadlines as Record<string, number>).map(([method, ms]) => {
    const what = `${who} ${method}`;
    return [method, (...args: unknown[]) => (gone ? Promise.reject(gone) : withDeadline(Promise.resolve(methods[method]!(...args)), ms, what, open))];
  })) as Peer<Api>;
}

export { Comlink };

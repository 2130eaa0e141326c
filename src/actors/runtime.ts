import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { Registry } from 'prom-client';
import type { ActorName, ActorToSupervisor, ActorWorkerData, ControlApi, PeerName, SupervisorToActor } from '../messages/lifecycle.js';
import type { Config } from '../shared/config/types.js';
import { UpdaterError, serializeError } from '../shared/errors.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { exposeOn, releaseRemote, withDeadline, wrapPort, type Remote } from '../shared/rpc.js';
import { registerRuntimeMetrics } from '../shared/runtime-metrics.js';

// The actor side of the supervisor protocol: receives its ports, exposes its API on every
// port peers call it through, keeps one proxy per peer it calls (replaced when the supervisor
// reconnects a restarted peer), and says Ready only once its async setup has finished.

/** Default deadline of a cross-actor call. */
export const CALL_DEADLINE_MS = 10_000;

export interface ActorContext {
  readonly name: ActorName;
  readonly config: Config;
  readonly log: Logger;
  readonly registry: Registry;
  /** The current proxy to a peer; throws ACTOR_UNAVAILABLE while none is connected. */
  peer<T>(name: PeerName): Remote<T>;
  /** Calls a peer with a deadline. */
  call<T, R>(name: PeerName, fn: (remote: Remote<T>) => Promise<R>, deadlineMs?: number): Promise<R>;
  /** Runs `listener` each time the supervisor connects (or reconnects) a peer. */
  onPeerConnected(listener: (peer: PeerName) => void): void;
}

export type ActorApi = ControlApi & object;

export async function runActor<Api extends ActorApi>(setup: (ctx: ActorContext) => Promise<Api>): Promise<void> {
  if (!parentPort) throw new Error('an actor must run in a worker thread');
  const data = workerData as ActorWorkerData;
  const log = createLogger(data.actor, data.logLevel);
  const peers = new Map<PeerName, Remote<unknown>>();
  const listeners: ((peer: PeerName) => void)[] = [];
  const servePorts: MessagePort[] = [...data.serves];
  let api: Api | undefined;

  const connect = (peer: PeerName, port: MessagePort) => {
    const old = peers.get(peer);
    if (old) releaseRemote(old);
    peers.set(peer, wrapPort(port));
    for (const listener of listeners) listener(peer);
  };
  for (const { peer, port } of data.links) connect(peer, port);

  parentPort.on('message', (message: SupervisorToActor) => {
    if (message.type === 'connect') connect(message.peer, message.port);
    else if (message.type === 'serve') {
      if (api) exposeOn(api, message.port);
      else servePorts.push(message.port);
    }
  });

  const registry = new Registry();
  registerRuntimeMetrics(registry, data.actor);
  const ctx: ActorContext = {
    name: data.actor,
    config: data.config,
    log,
    registry,
    peer<T>(name: PeerName): Remote<T> {
      const remote = peers.get(name);
      if (!remote) throw new UpdaterError('ACTOR_UNAVAILABLE', `${name} is not connected`);
      return remote as Remote<T>;
    },
    call<T, R>(name: PeerName, fn: (remote: Remote<T>) => Promise<R>, deadlineMs = CALL_DEADLINE_MS): Promise<R> {
      return withDeadline(fn(ctx.peer<T>(name)), deadlineMs, name);
    },
    onPeerConnected(listener) {
      listeners.push(listener);
    },
  };

  const post = (message: ActorToSupervisor) => parentPort!.postMessage(message);
  try {
    api = await setup(ctx);
  } catch (err) {
    log.fatal({ err }, 'actor setup failed');
    post({ type: 'fatal', error: serializeError(err) });
    // Let the message and the log line leave before the thread ends.
    setTimeout(() => process.exit(1), 50);
    return;
  }
  for (const port of servePorts.splice(0)) exposeOn(api, port);
  post({ type: 'ready' });
}

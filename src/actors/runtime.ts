import { writeFileSync } from 'node:fs';
import { parentPort, type MessagePort } from 'node:worker_threads';
import { Registry } from 'prom-client';
import type { ActorName, ActorToSupervisor, ActorWorkerData, ControlApi, PeerName, SupervisorToActor } from '../messages/lifecycle.js';
import { PEER_DEADLINES_MS, type Peer, type PeerApis } from '../messages/peers.js';
import type { Config } from '../shared/config/types.js';
import { UpdaterError, serializeError } from '../shared/errors.js';
import { createLogger, isLogLevel, type Logger } from '../shared/logger.js';
import { liveMemory } from '../shared/live-memory.js';
import { exposeOn, releaseRemote, withDeadlines, wrapPort, type Remote } from '../shared/rpc.js';
import { startGarbageCollector } from '../shared/garbage-collector.js';
import { registerRuntimeMetrics } from '../shared/runtime-metrics.js';

// The actor side of the supervisor protocol: receives its ports, exposes its API on every
// port peers call it through, keeps one proxy per peer it calls (replaced when the supervisor
// reconnects a restarted peer), and says Ready only once its async setup has finished. The
// control calls every actor answers the same way (metrics, log level, memory) are added here,
// once; an actor's setup returns its own API and its drain.

export interface ActorContext {
  readonly name: ActorName;
  readonly config: Config;
  readonly log: Logger;
  readonly registry: Registry;
  /**
   * The current proxy to a peer, each method bounded by the deadline its API states
   * (src/messages/<peer>.ts); throws ACTOR_UNAVAILABLE while none is connected.
   */
  peer<P extends PeerName>(name: P): Peer<PeerApis[P]>;
  /** Calls a peer; rejects with ACTOR_UNAVAILABLE while it is not connected, ACTOR_TIMEOUT past the deadline. */
  call<P extends PeerName, R>(name: P, fn: (peer: Peer<PeerApis[P]>) => Promise<R>): Promise<R>;
  /** Runs `listener` each time the supervisor connects (or reconnects) a peer. */
  onPeerConnected(listener: (peer: PeerName) => void): void;
}

/** The control calls runActor answers for every actor. */
type RuntimeControl = 'metrics' | 'setLogLevel' | 'memory';

/** What an actor's setup returns: its API without the control calls runActor adds (drain stays the actor's). */
export type OwnApi<Api extends ControlApi> = Omit<Api, RuntimeControl>;

export async function runActor(setup: (ctx: ActorContext) => Promise<OwnApi<ControlApi> & object>): Promise<void> {
  if (!parentPort) throw new Error('an actor must run in a worker thread');
  // The worker loads its modules first; its ports and configuration arrive in `start`, sent once
  // its callees are ready. Nothing else is sent to an actor before it has said Ready.
  const port = parentPort;
  let startWith!: (data: ActorWorkerData) => void;
  const started = new Promise<ActorWorkerData>((resolve) => (startWith = resolve));
  const peers = new Map<PeerName, { remote: Remote<unknown>; peer: unknown }>();
  const listeners: ((peer: PeerName) => void)[] = [];
  const servePorts: MessagePort[] = [];
  let api: ControlApi | undefined;

  const connect = (peer: PeerName, link: MessagePort) => {
    const old = peers.get(peer);
    if (old) releaseRemote(old.remote);
    const remote = wrapPort(link);
    const entry = { remote, peer: withDeadlines(remote, PEER_DEADLINES_MS[peer] as Record<string, number>, peer, link) };
    peers.set(peer, entry);
    // The peer's thread ended (a crash, a start refused): until the supervisor connects its
    // successor, calls to it fail at once with ACTOR_UNAVAILABLE instead of each waiting out
    // its deadline on a port nobody reads.
    link.once('close', () => {
      if (peers.get(peer) === entry) peers.delete(peer);
    });
    for (const listener of listeners) listener(peer);
  };
  port.on('message', (message: SupervisorToActor) => {
    if (message.type === 'start') startWith(message.data);
    else if (message.type === 'connect') connect(message.peer, message.port);
    else if (message.type === 'serve') {
      if (api) exposeOn(api, message.port);
      else servePorts.push(message.port);
    }
  });
  const data = await started;
  nameThisThread(data.actor);
  const log = createLogger(data.actor, data.logLevel);
  servePorts.push(...data.serves);
  for (const link of data.links) connect(link.peer, link.port);

  const registry = new Registry();
  registerRuntimeMetrics(registry, data.actor);
  startGarbageCollector(registry, data.actor);
  const ctx: ActorContext = {
    name: data.actor,
    config: data.config,
    log,
    registry,
    peer<P extends PeerName>(name: P): Peer<PeerApis[P]> {
      const connected = peers.get(name);
      if (!connected) throw new UpdaterError('ACTOR_UNAVAILABLE', `${name} is not connected`);
      // The one cast: the facade was built from this peer's own deadline table.
      return connected.peer as Peer<PeerApis[P]>;
    },
    call<P extends PeerName, R>(name: P, fn: (peer: Peer<PeerApis[P]>) => Promise<R>): Promise<R> {
      try {
        return fn(ctx.peer(name));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    onPeerConnected(listener) {
      listeners.push(listener);
    },
  };

  const post = (message: ActorToSupervisor) => port.postMessage(message);
  try {
    const own = await setup(ctx);
    api = {
      ...own,
      metrics: async () => registry.getMetricsAsJSON(),
      setLogLevel: (level) => {
        if (!isLogLevel(level)) throw new UpdaterError('INVALID_FIELD', `unknown log level ${String(level)}`);
        log.level = level;
      },
      memory: async () => liveMemory(),
    } satisfies ControlApi;
  } catch (err) {
    // The supervisor logs it, once for a start and once an outage for a restart that waits for
    // the database (src/supervisor/index.ts): here it would repeat at every attempt.
    log.debug({ err }, 'actor setup failed');
    post({ type: 'fatal', error: serializeError(err) });
    // Let the message and the log line leave before the thread ends.
    setTimeout(() => process.exit(1), 50);
    return;
  }
  for (const port of servePorts.splice(0)) exposeOn(api, port);
  post({ type: 'ready' });
}

/**
 * Names the thread after its actor (Linux, best effort), so that `top -H`, `ps -L` and the
 * benches' per-thread CPU (bench/threads.ts) tell the actors apart: every worker of a Node
 * process is otherwise called "node".
 */
function nameThisThread(actor: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', actor.slice(0, 15));
  } catch {
    // Not Linux, or a sandbox without /proc: the name is only a convenience.
  }
}

import type { MessagePort } from 'node:worker_threads';
import type { Config } from '../shared/config/types.js';
import type { SerializedError } from '../shared/errors.js';
import type { LogLevel } from '../shared/logger.js';
import type { Deadlines } from '../shared/rpc.js';
import type { ThreadMemory } from '../shared/live-memory.js';

export type { Deadlines } from '../shared/rpc.js';

// The supervisor ↔ actor lifecycle protocol, carried on each worker's parentPort. Actor APIs
// themselves travel over comlink on dedicated MessagePorts, one port per caller → callee link.

export type ActorName = 'store-keeper' | 'fleet' | 'manifester' | 'sweeper' | 'http' | 'coap';
export type PeerName = ActorName | 'supervisor';

export interface ActorWorkerData {
  readonly actor: ActorName;
  readonly config: Config;
  readonly logLevel: LogLevel;
  /** Ports on which this actor calls its peers (this actor is the caller). */
  readonly links: readonly { peer: PeerName; port: MessagePort }[];
  /** Ports on which peers call this actor (this actor exposes its API). */
  readonly serves: readonly MessagePort[];
}

/**
 * A worker is created (and loads its modules) before its turn to start comes, so the actors of
 * one server load side by side; its ports and configuration reach it later, in `start`.
 */
export interface ActorPreloadData {
  readonly actor: ActorName;
}

export type SupervisorToActor =
  | { type: 'start'; data: ActorWorkerData }
  | { type: 'connect'; peer: PeerName; port: MessagePort }
  | { type: 'serve'; port: MessagePort };

export type ActorToSupervisor =
  | { type: 'ready' }
  | { type: 'fatal'; error: SerializedError };

/**
 * One thread's memory right after a full collection: what it holds alive, garbage excluded
 * (POST /admin/memory, docs/memory.md). Bytes.
 */
export type { ThreadMemory };

/** Every actor answers these, besides its own API. */
export interface ControlApi {
  /** prom-client's JSON form of this actor's registry, merged by the supervisor. */
  metrics(): Promise<unknown[]>;
  setLogLevel(level: LogLevel): void;
  /** Runs a full collection in this thread, then reads its memory. */
  memory(): Promise<ThreadMemory>;
  /** Stop taking new work, finish what is under way, release resources. */
  drain(): Promise<void>;
}

export const CONTROL_DEADLINES_MS = {
  metrics: 2_000,
  setLogLevel: 2_000,
  /** A full collection of one of our heaps takes milliseconds; the thread may be busy. */
  memory: 5_000,
  /** Drain in reverse order: stop taking requests first, then let work under way finish. */
  drain: 20_000,
} as const satisfies Deadlines<ControlApi>;

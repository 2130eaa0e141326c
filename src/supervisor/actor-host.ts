import { existsSync } from 'node:fs';
import { Worker, type MessagePort } from 'node:worker_threads';
import { CONTROL_DEADLINES_MS, type ActorName, type ActorPreloadData, type ActorToSupervisor, type ActorWorkerData, type ControlApi, type SupervisorToActor } from '../messages/lifecycle.js';
import { UpdaterError, deserializeError } from '../shared/errors.js';
import { wrapPort, releaseRemote, withDeadlines, type Peer, type Remote } from '../shared/rpc.js';

/** How long each actor may take to say Ready (its async setup). */
export const READY_DEADLINE_MS: Record<ActorName, number> = {
  // Reads every stored file once at start to check it against its name (a large store on a
  // slow disk takes minutes).
  'store-keeper': 30 * 60_000,
  // Opens the database and applies its migrations.
  fleet: 120_000,
  // Registers the configured binaries, streaming each into the store.
  manifester: 15 * 60_000,
  // A worker thread's own start (loading its modules) takes well under a second on an idle
  // machine, but tens of seconds on a saturated one: a generous deadline, not a tight one.
  sweeper: 60_000,
  http: 60_000,
  coap: 60_000,
};

/**
 * Each actor's V8 heap is fenced. The young generation is what makes an idle isolate grow
 * under load (V8 lets it reach 3 × 16 MiB per isolate by default), so it is kept small: more
 * frequent minor GCs, a flat RSS. The old generation holds only an actor's own state (the
 * caches' bytes live in SharedArrayBuffers outside it); its cap is a fence against a leak,
 * which then ends the worker and the supervisor restarts it.
 */
export const ACTOR_HEAP_LIMITS = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 512 } as const;

/**
 * The threads every heartbeat passes through get a larger young generation: an HTTP heartbeat
 * allocates about 4 KiB in its front-end and a CoAP one about 16 KiB (as much as a bare
 * node-coap server: most of it is node-coap's), so with 8 MiB the HTTP thread ran a minor
 * collection every 17 ms at 54,000 heartbeats a second, and the fleet thread copied and
 * promoted the records it holds until their flush. Each of the three holds up to 16 MiB more
 * under load for it (docs/memory.md); what it saves is in
 * bench/results/2026-11-27-young-generation.md.
 */
const HOT_ACTORS: ReadonlySet<ActorName> = new Set(['http', 'coap', 'fleet']);
const HOT_YOUNG_GENERATION_MB = 32;

function heapLimitsOf(name: ActorName): { maxYoungGenerationSizeMb: number; maxOldGenerationSizeMb: number } {
  return HOT_ACTORS.has(name) ? { ...ACTOR_HEAP_LIMITS, maxYoungGenerationSizeMb: HOT_YOUNG_GENERATION_MB } : ACTOR_HEAP_LIMITS;
}

/**
 * The Node options of an actor thread, when they are not the process's own. A new thread reads
 * both its arguments and the NODE_OPTIONS of its environment (Node parses the variable again
 * for every worker), so an option kept out of one must be kept out of the other too.
 */
export interface ActorNodeOptions {
  readonly execArgv: readonly string[];
  /** The thread's NODE_OPTIONS. */
  readonly nodeOptions: string;
}

function workerNodeOptions(options: ActorNodeOptions | undefined): { execArgv?: string[]; env?: NodeJS.ProcessEnv } {
  if (!options) return {};
  // A worker's environment is a copy of the process's taken at its start, with or without this.
  return { execArgv: [...options.execArgv], env: { ...process.env, NODE_OPTIONS: options.nodeOptions } };
}

/**
 * The module an actor's worker runs: the actor bundled into one file by `npm run build`
 * (tools/build.js), whose worker starts on about half the CPU of one that loads its
 * several hundred modules one by one; the actor's own index.js with UPDATER_UNBUNDLED=1 (for
 * CPU profiles and stack traces that name the source files) or when no bundle was built.
 */
export function actorFile(name: ActorName): URL {
  const bundle = new URL(`../actors/${name}/index.bundle.mjs`, import.meta.url);
  return process.env.UPDATER_UNBUNDLED !== '1' && existsSync(bundle) ? bundle : new URL(`../actors/${name}/index.js`, import.meta.url);
}

interface Preloaded {
  readonly worker: Worker;
  readonly exited: Promise<number>;
  readonly onError: (err: Error) => void;
  loadError?: Error;
}

/** One actor's worker thread: started with a Ready handshake, watched for unexpected exits. */
export class ActorHost {
  worker: Worker | undefined;
  /** The actor's control API, each call bounded by CONTROL_DEADLINES_MS. */
  control: Peer<ControlApi> | undefined;
  private controlRemote: Remote<ControlApi> | undefined;
  ready = false;
  /** Set by the supervisor before it ends a worker on purpose. */
  stopping = false;
  private preloaded: Preloaded | undefined;
  /** The module the latest worker runs (actorFile): its bundle, or its index.js. */
  file: URL | undefined;

  /** `nodeOptions`: the thread's, when not the process's own (ServerOptions.actorNodeOptions). */
  constructor(readonly name: ActorName, private readonly onExit: (host: ActorHost, code: number) => void, private readonly nodeOptions?: ActorNodeOptions) {}

  /**
   * Creates the worker so that it loads its modules while earlier actors start; `start` then
   * hands it its ports. Loading side by side is most of what makes a server start quickly.
   */
  preload(): void {
    if (this.preloaded) return;
    const data: ActorPreloadData = { actor: this.name };
    this.file = actorFile(this.name);
    const worker = new Worker(this.file, { workerData: data, resourceLimits: heapLimitsOf(this.name), ...workerNodeOptions(this.nodeOptions) });
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    // A module that fails to load ends the worker before its start: start() reports this error.
    const preloaded: Preloaded = { worker, exited, onError: (err) => (preloaded.loadError ??= err) };
    worker.on('error', preloaded.onError);
    this.preloaded = preloaded;
  }

  async start(data: ActorWorkerData, controlPort: MessagePort, transfer: MessagePort[]): Promise<void> {
    this.ready = false;
    this.stopping = false;
    this.preload();
    const preloaded = this.preloaded!;
    this.preloaded = undefined;
    const { worker, exited } = preloaded;
    worker.off('error', preloaded.onError);
    this.worker = worker;
    this.controlRemote = wrapPort<ControlApi>(controlPort);
    this.control = withDeadlines(this.controlRemote, CONTROL_DEADLINES_MS, this.name, controlPort);
    const deadline = READY_DEADLINE_MS[this.name];
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => settle(() => reject(new UpdaterError('ACTOR_TIMEOUT', `${this.name} did not become ready within ${deadline} ms`))), deadline);
        const onMessage = (message: ActorToSupervisor) => {
          if (message.type === 'ready') settle(resolve);
          else if (message.type === 'fatal') settle(() => reject(deserializeError(message.error)));
        };
        let settled = false;
        const onError = (err: Error) => settle(() => reject(err));
        const settle = (fn: () => void) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          worker.off('message', onMessage);
          worker.off('error', onError);
          fn();
        };
        // Also catches a worker that ended while it was loading, before this start.
        void exited.then((code) => settle(() => reject(preloaded.loadError ?? new UpdaterError('INTERNAL', `${this.name} exited with code ${code} before it was ready`))));
        worker.on('message', onMessage);
        worker.on('error', onError);
        const start: SupervisorToActor = { type: 'start', data };
        worker.postMessage(start, transfer as never[]);
      });
    } catch (err) {
      this.stopping = true;
      await worker.terminate();
      throw err;
    }
    this.ready = true;
    worker.on('error', () => undefined); // reported through 'exit'; logged by the actor itself
    void exited.then((code) => {
      this.ready = false;
      if (this.controlRemote) releaseRemote(this.controlRemote);
      this.control = undefined;
      this.controlRemote = undefined;
      if (!this.stopping) this.onExit(this, code);
    });
  }

  post(message: SupervisorToActor, transfer: MessagePort[] = []): void {
    this.worker?.postMessage(message, transfer as never[]);
  }

  async terminate(): Promise<void> {
    this.stopping = true;
    await Promise.all([this.worker?.terminate(), this.preloaded?.worker.terminate()]);
    this.preloaded = undefined;
  }
}

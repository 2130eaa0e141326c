import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { ActorName, ActorWorkerData, PeerName } from '../messages/lifecycle.js';
import type { ServerMemory, SupervisorApi } from '../messages/supervisor.js';
import type { Config } from '../shared/config/types.js';
import { errorStatus, UpdaterError } from '../shared/errors.js';
import { createLogger, isLogLevel, type Logger, type LogLevel } from '../shared/logger.js';
import { liveMemory } from '../shared/live-memory.js';
import { exposeOn } from '../shared/rpc.js';
import { ActorHost, type ActorNodeOptions } from './actor-host.js';
import { MallocTrimmer } from './malloc-trimmer.js';
import { SupervisorMetrics } from './metrics.js';
import { afterFailedStart, decideRestart, DEFAULT_RESTART_POLICY, type RestartPolicy } from './restart-policy.js';

//   devices ─HTTP─▶ http ──▶ manifester ──▶ store-keeper ──▶ diff pool (Piscina)
//                    │  ▲         ▲               │
//                    │  └─────────┼── events ◀────┘
//                    └──▶ store-keeper (locate)      supervisor: control of every actor,
//                    └──▶ supervisor (metrics)       metrics, restarts, drain
//                    └──▶ sweeper (gc) ──▶ manifester (references), store-keeper (inventory, remove)
//   http, coap ──▶ fleet (inventory records after each answer; admin fleet reads) ──▶ manifester (default track)
//   manifester ──▶ fleet (rollout health counts, once a second while a rollout runs)
//   devices ─CoAP─▶ coap: the same manifester and store-keeper links as http (no supervisor
//                   link: /metrics is HTTP only); started only when listen.coap is set.
//
// One comlink link per (caller → callee) pair, each on its own MessageChannel. When an actor
// restarts, the supervisor builds fresh channels for every link that touches it.

/** Start order: each actor's callees come before it. */
const ACTORS: readonly ActorName[] = ['store-keeper', 'fleet', 'manifester', 'sweeper', 'http', 'coap'];
const LINKS: readonly (readonly [caller: ActorName, callee: PeerName])[] = [
  ['manifester', 'store-keeper'],
  ['store-keeper', 'manifester'],
  ['http', 'manifester'],
  ['http', 'store-keeper'],
  ['http', 'supervisor'],
  ['http', 'sweeper'],
  ['sweeper', 'manifester'],
  ['sweeper', 'store-keeper'],
  ['coap', 'manifester'],
  ['coap', 'store-keeper'],
  ['http', 'fleet'],
  ['coap', 'fleet'],
  ['fleet', 'manifester'],
  ['manifester', 'fleet'],
];

/** The actors this configuration runs: CoAP only when `listen.coap` is set, fleet unless turned off. */
function actorsFor(config: Config): readonly ActorName[] {
  return ACTORS.filter((name) => (name !== 'coap' || config.listen.coap !== undefined) && (name !== 'fleet' || config.fleet.enabled));
}

// Control calls (drain, metrics, setLogLevel) carry the deadlines of CONTROL_DEADLINES_MS
// (src/messages/lifecycle.ts); drain goes in reverse order: stop taking requests first, then
// let work under way finish.

export interface ServerOptions {
  restartPolicy?: RestartPolicy;
  /** Called when an actor keeps crashing and the supervisor gives up. */
  onFatal?: (err: UpdaterError) => void;
  /**
   * Node options of the actor threads; by default Node's: the process's own. An embedding
   * process whose own loaders the actors do not need leaves them out here (each thread would
   * run them again: a test runner's loader hooks tripled a server's start).
   */
  actorNodeOptions?: ActorNodeOptions;
}

/** How long POST /admin/memory waits after the collections for V8's background frees before it trims. */
const COLLECTED_FREES_MS = 250;

export class Supervisor {
  readonly log: Logger;
  readonly metrics = new SupervisorMetrics();
  private readonly trimmer: MallocTrimmer;
  private readonly hosts = new Map<ActorName, ActorHost>();
  private readonly crashes = new Map<ActorName, number[]>();
  /** Actors whose restart waits for the database to come back. */
  private readonly waitingForDatabase = new Set<ActorName>();
  private logLevel: LogLevel;
  private stopped = false;

  constructor(readonly config: Config, private readonly options: ServerOptions = {}) {
    this.logLevel = config.logLevel;
    this.log = createLogger('supervisor', this.logLevel);
    this.trimmer = new MallocTrimmer(this.metrics.registry, this.log);
  }

  async start(): Promise<void> {
    const names = actorsFor(this.config);
    for (const name of names) this.hosts.set(name, new ActorHost(name, (h, code) => this.onCrash(h, code), this.options.actorNodeOptions));
    // Every worker loads its modules at once; each then starts in order, after its callees.
    for (const host of this.hosts.values()) host.preload();
    for (const host of this.hosts.values()) {
      const name = host.name;
      try {
        await this.spawn(host);
      } catch (err) {
        this.log.fatal({ err, actor: name }, 'actor failed to start');
        await this.stop();
        throw err;
      }
    }
    this.log.info({ actors: names }, 'server started');
  }

  /** The worker of a running actor (tests use it to simulate a crash). */
  actor(name: ActorName): ActorHost | undefined {
    return this.hosts.get(name);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const name of [...ACTORS].reverse()) {
      const host = this.hosts.get(name);
      if (!host?.ready || !host.control) continue;
      host.stopping = true;
      try {
        await host.control.drain();
      } catch (err) {
        this.log.warn({ err, actor: name }, 'actor did not drain in time');
      }
    }
    await Promise.all([...this.hosts.values()].map((h) => h.terminate()));
    this.trimmer.stop();
    this.log.info('server stopped');
  }

  private async spawn(host: ActorHost): Promise<void> {
    const name = host.name;
    const links: { peer: PeerName; port: MessagePort }[] = [];
    const serves: MessagePort[] = [];
    const transfer: MessagePort[] = [];
    for (const [caller, callee] of LINKS) {
      if (caller === name && (callee === 'supervisor' || this.hosts.get(callee)?.ready)) {
        const { port1, port2 } = new MessageChannel();
        links.push({ peer: callee, port: port1 });
        transfer.push(port1);
        if (callee === 'supervisor') exposeOn(this.supervisorApi(), port2);
        else this.hosts.get(callee)!.post({ type: 'serve', port: port2 }, [port2]);
      } else if (callee === name && this.hosts.get(caller)?.ready) {
        const { port1, port2 } = new MessageChannel();
        this.hosts.get(caller)!.post({ type: 'connect', peer: name, port: port1 }, [port1]);
        serves.push(port2);
        transfer.push(port2);
      }
    }
    const control = new MessageChannel();
    serves.push(control.port2);
    transfer.push(control.port2);
    const data: ActorWorkerData = { actor: name, config: this.config, logLevel: this.logLevel, links, serves };
    await host.start(data, control.port1, transfer);
    this.log.info({ actor: name }, 'actor ready');
  }

  private onCrash(host: ActorHost, code: number): void {
    if (this.stopped) return;
    const decision = decideRestart(this.crashes.get(host.name) ?? [], Date.now(), this.options.restartPolicy ?? DEFAULT_RESTART_POLICY);
    this.crashes.set(host.name, [...decision.recent]);
    if (decision.action === 'escalate') {
      const err = new UpdaterError('INTERNAL', `${host.name} crashed ${decision.recent.length} times within a minute; giving up`);
      this.log.fatal({ actor: host.name, exitCode: code, crashes: decision.recent.length }, err.message);
      void this.stop().then(() => this.options.onFatal?.(err));
      return;
    }
    this.log.error({ actor: host.name, exitCode: code, restartInMs: decision.delayMs }, 'actor crashed; restarting');
    this.metrics.restarted(host.name);
    setTimeout(() => this.restart(host), decision.delayMs);
  }

  /** Starts a crashed actor again; a start refused for want of the database is retried until it is back (afterFailedStart). */
  private restart(host: ActorHost): void {
    if (this.stopped) return;
    this.spawn(host).then(() => {
      if (this.waitingForDatabase.delete(host.name)) this.log.warn({ actor: host.name }, 'actor started again: the database is back');
    }, (err) => {
      if (this.stopped) return;
      const { code } = errorStatus(err);
      this.metrics.startFailed(host.name, code);
      const next = afterFailedStart(code, this.options.restartPolicy ?? DEFAULT_RESTART_POLICY);
      if (next.action === 'crash') {
        this.waitingForDatabase.delete(host.name);
        this.log.error({ err, actor: host.name }, 'actor restart failed');
        this.onCrash(host, -1);
        return;
      }
      // Once an outage, not at every attempt: the attempts are counted in the metrics.
      const first = !this.waitingForDatabase.has(host.name);
      this.waitingForDatabase.add(host.name);
      this.log[first ? 'error' : 'debug']({ err, actor: host.name, retryInMs: next.delayMs }, 'actor cannot start without the database; trying again until it is back');
      setTimeout(() => this.restart(host), next.delayMs);
    });
  }

  private supervisorApi(): SupervisorApi {
    return {
      metricsText: async () => {
        const running = [...this.hosts.values()].filter((h) => h.ready && h.control);
        const results = await Promise.allSettled(running.map((h) => h.control!.metrics()));
        return this.metrics.render(results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])));
      },
      setLogLevel: async (level) => {
        if (!isLogLevel(level)) throw new UpdaterError('INVALID_FIELD', `level must be one of trace, debug, info, warn, error`);
        // Kept here so that an actor restarted later starts at the new level too.
        this.logLevel = level;
        this.log.level = level;
        const running = [...this.hosts.values()].filter((h) => h.ready && h.control);
        const results = await Promise.allSettled(running.map((h) => h.control!.setLogLevel(level)));
        const applied = running.filter((_, i) => results[i]!.status === 'fulfilled').map((h) => h.name);
        this.log.info({ level, applied }, 'log level changed');
        return { level, applied: ['supervisor' as const, ...applied] };
      },
      memory: async () => {
        const running = [...this.hosts.values()].filter((h) => h.ready && h.control);
        const results = await Promise.allSettled(running.map((h) => h.control!.memory()));
        const threads: ServerMemory['threads'] = { supervisor: liveMemory() };
        running.forEach((h, i) => {
          const r = results[i]!;
          if (r.status === 'fulfilled') threads[h.name] = r.value;
        });
        // glibc keeps the pages of what the collections and native code freed until it is
        // trimmed. V8 frees dead buffers' memory from a background task just after a
        // collection, hence the pause: the RSS answered is then close to what the process holds.
        await sleep(COLLECTED_FREES_MS);
        this.trimmer.trim();
        return { rss: process.memoryUsage.rss(), threads };
      },
    };
  }
}

export async function startServer(config: Config, options?: ServerOptions): Promise<Supervisor> {
  const supervisor = new Supervisor(config, options);
  await supervisor.start();
  return supervisor;
}

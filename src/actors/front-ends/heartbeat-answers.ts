import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge } from 'prom-client';
import type { DecisionSnapshot } from '../../messages/decision-snapshot.js';
import type { AnswerEncoding, EncodedAnswer, HeartbeatRequest } from '../../messages/manifester.js';
import { createDecisionCounters } from '../../shared/decision/counters.js';
import { formatsOffered } from '../../shared/delta-formats.js';
import { plainCounter } from '../../shared/plain-counter.js';
import type { ActorContext } from '../runtime.js';
import { DecisionReplica, Hop } from './decision-replica.js';
import { followTargetingFacts } from './targeting-facts.js';
import { WindowClock } from '../../shared/decision/window-clock.js';
import { encodeCoapManifest } from '../../shared/wire/cbor.js';
import type { ManifestWire } from '../../shared/wire/keys.js';
import { manifesterBatcher } from './heartbeat-batcher.js';
import { plantedLeak } from './test-leak.js';
import { firstDelayMs } from './test-delays.js';

// How a front-end answers heartbeats: from its copy of the manifester's decisions when that
// holds the answer (the steady state: up to date, or a signed delta or full file already
// made), else through the manifester, in batches (heartbeat-batcher.ts). The copy follows the
// manifester's snapshots by long poll; while the manifester restarts, the last one stays in
// force, as it was the manifester's last word.
//
//   heartbeat ─▶ DecisionReplica.answer ─hit──▶ answer (no message)
//                                        └miss─▶ batcher ─▶ manifester ─▶ answer (and a newer snapshot)
//
// A front-end that has just started holds neither: until it holds its first snapshot and (with
// the inventory) its first targeting index, milliseconds after its start, heartbeats wait for
// them. Answered earlier, a member of a rollout's group step would have been routed as if
// outside it: the manifester, where a heartbeat goes without a snapshot, judges no group, and
// without the index no device is a member of any.

const RETRY_MS = 1_000;
/** How long heartbeats wait for the first snapshot and targeting index before they are answered without them (the actor that owes one is away). */
const FIRST_STATE_WAIT_MS = 3_000;

export interface HeartbeatAnswers<T> {
  /** The answer body: at once from the snapshot, or the manifester's later. */
  answer(request: HeartbeatRequest): T | Promise<T>;
  /** Stops following the snapshots (drain). */
  stop(): void;
}

export function heartbeatAnswers<E extends AnswerEncoding>(ctx: ActorContext, encoding: E): HeartbeatAnswers<EncodedAnswer[E]> {
  const { config } = ctx;
  const targeting = followTargetingFacts(ctx);
  const replica = new DecisionReplica<EncodedAnswer[E]>({
    offered: formatsOffered(config.store.deltaEngine),
    capBytes: config.store.deltaMaxSourceBytes,
    allowFullDownload: config.allowFullDownload,
    encode: (encoding === 'json' ? JSON.stringify : encodeCoapManifest) as (answer: ManifestWire) => EncodedAnswer[E],
  }, createDecisionCounters(ctx.registry), new WindowClock(), config.fleet.enabled ? targeting.facts : undefined);
  const batcher = manifesterBatcher(ctx, encoding);
  let snapshots = 0;
  const answered = registerMetrics(ctx, () => snapshots, () => replica.bytes);

  const leak = ctx.name === 'http' ? plantedLeak(ctx.log) : undefined;
  let stopped = false;
  let firstSnapshot!: () => void;
  const snapshotHeld = new Promise<void>((resolve) => (firstSnapshot = resolve));
  const follow = async (): Promise<void> => {
    const holdMs = firstDelayMs('snapshot', ctx.log);
    if (holdMs > 0) await sleep(holdMs);
    while (!stopped) {
      try {
        // The typed peer proxy loses the method's type parameter: the answer is restated here, once.
        const next = await ctx.call('manifester', (m) => m.decisionSnapshot(ctx.name, replica.version, encoding)) as DecisionSnapshot<EncodedAnswer[E]> | null;
        if (next && !stopped) {
          replica.apply(next);
          snapshots++;
          firstSnapshot();
        }
      } catch (err) {
        if (stopped) return;
        ctx.log.debug({ err }, 'decision snapshot not refreshed; asking again');
        await sleep(RETRY_MS);
      }
    }
  };
  void follow();
  /** Until the front-end holds both (or gave up waiting), what a heartbeat waits for; then undefined. */
  let starting: Promise<void> | undefined = firstState(ctx, Promise.all([snapshotHeld, targeting.first])).then(() => (starting = undefined));

  const answerNow = (request: HeartbeatRequest): EncodedAnswer[E] | Promise<EncodedAnswer[E]> => {
    const answer = replica.answer(request);
    if (!(answer instanceof Hop)) {
      answered.snapshot++;
      return answer;
    }
    answered.manifester++;
    return batcher.heartbeat(answer.route ? { ...request, route: answer.route } : request);
  };

  return {
    answer(request) {
      leak?.(1);
      return starting ? starting.then(() => answerNow(request)) : answerNow(request);
    },
    stop() {
      stopped = true;
      targeting.stop();
    },
  };
}

/** Resolves once `held` does, or after FIRST_STATE_WAIT_MS, logged: heartbeats are then answered from what there is. */
function firstState(ctx: ActorContext, held: Promise<unknown>): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      ctx.log.warn({ waited_ms: FIRST_STATE_WAIT_MS }, 'no decision snapshot or targeting index yet; answering heartbeats without them (a group step admits nobody until the index comes)');
      resolve();
    }, FIRST_STATE_WAIT_MS);
    timer.unref();
    void held.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Registers this front-end's metrics; returns the answered counts to increment. */
function registerMetrics(ctx: ActorContext, received: () => number, bytes: () => number): Record<'snapshot' | 'manifester', number> {
  const thread = ctx.name;
  const answered = plainCounter(ctx.registry, {
    name: 'updater_heartbeats_answered_total',
    help: 'Heartbeats answered, by who decided: the front-end from its decision snapshot, or the manifester',
    label: 'by',
    values: ['snapshot', 'manifester'],
  });
  new Counter({
    name: 'updater_decision_snapshots_received_total',
    help: 'Decision snapshots a front-end received from the manifester',
    labelNames: ['thread'],
    registers: [ctx.registry],
    collect() {
      this.reset();
      this.inc({ thread }, received());
    },
  });
  new Gauge({
    name: 'updater_decision_snapshot_bytes',
    help: 'About what the decision snapshot a front-end holds weighs in its heap',
    labelNames: ['thread'],
    registers: [ctx.registry],
    collect() {
      this.set({ thread }, bytes());
    },
  });
  return answered;
}

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

// How a front-end answers heartbeats: from its copy of the manifester's decisions when that
// holds the answer (the steady state: up to date, or a signed delta or full file already
// made), else through the manifester, in batches (heartbeat-batcher.ts). The copy follows the
// manifester's snapshots by long poll; while the manifester restarts, the last one stays in
// force, as it was the manifester's last word.
//
//   heartbeat ─▶ DecisionReplica.answer ─hit──▶ answer (no message)
//                                        └miss─▶ batcher ─▶ manifester ─▶ answer (and a newer snapshot)

const RETRY_MS = 1_000;

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
  const follow = async (): Promise<void> => {
    while (!stopped) {
      try {
        // The typed peer proxy loses the method's type parameter: the answer is restated here, once.
        const next = await ctx.call('manifester', (m) => m.decisionSnapshot(ctx.name, replica.version, encoding)) as DecisionSnapshot<EncodedAnswer[E]> | null;
        if (next && !stopped) {
          replica.apply(next);
          snapshots++;
        }
      } catch (err) {
        if (stopped) return;
        ctx.log.debug({ err }, 'decision snapshot not refreshed; asking again');
        await sleep(RETRY_MS);
      }
    }
  };
  void follow();

  return {
    answer(request) {
      leak?.(1);
      const answer = replica.answer(request);
      if (!(answer instanceof Hop)) {
        answered.snapshot++;
        return answer;
      }
      answered.manifester++;
      return batcher.heartbeat(answer.route ? { ...request, route: answer.route } : request);
    },
    stop() {
      stopped = true;
      targeting.stop();
    },
  };
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

import { FULL_ANSWER, signedAnswerKey, transferKey, type DecisionSnapshot, type TargetAnswers } from '../../messages/decision-snapshot.js';
import type { HeartbeatRequest } from '../../messages/manifester.js';
import type { TransferInfo } from '../../messages/store.js';
import { decide, type StoreQuery } from '../../shared/decision/decide.js';
import type { DecisionCounters } from '../../shared/decision/counters.js';
import { routeDevice } from '../../shared/decision/route.js';
import { chooseFormat, type DeltaFormat } from '../../shared/delta-formats.js';

// A front-end's copy of the manifester's decisions: it answers a heartbeat from the latest
// snapshot (src/messages/decision-snapshot.ts) with the manifester's own pure rules
// (src/shared/decision/), and says `undefined` for everything that needs the manifester: an
// unknown or unnormalized track name (the manifester resolves it or refuses it), an offer of a
// rollout's target (the manifester records who was offered what), a delta or full file not
// made yet, an answer not signed yet, a binary over the size cap (the manifester warns of it).
// The manifester answers those as before, and its next snapshot holds what it made.

export interface ReplicaSettings {
  readonly offered: readonly DeltaFormat[];
  /** `store.delta_max_source_mb` in bytes; 0 disables the cap. */
  readonly capBytes: number;
  readonly allowFullDownload: boolean;
}

export class DecisionReplica<T> {
  private snapshot: DecisionSnapshot<T> | undefined;
  private store: StoreQuery<TransferInfo> | undefined;

  constructor(private readonly settings: ReplicaSettings, private readonly counters: DecisionCounters) {}

  /** The version held, '' before the first. */
  get version(): string {
    return this.snapshot?.version ?? '';
  }

  /** What the snapshot held weighs (0 before the first). */
  get bytes(): number {
    return this.snapshot?.bytes ?? 0;
  }

  apply(snapshot: DecisionSnapshot<T>): void {
    this.snapshot = snapshot;
    const { binaries, transfers } = snapshot;
    this.store = {
      binarySize: (hash) => binaries.get(hash),
      delta: (from, to, format) => transfers.get(transferKey('delta', to, from, format)),
      full: (to) => transfers.get(transferKey('full', to)),
    };
  }

  /** The answer the manifester would give, or undefined when only the manifester can give it. */
  answer(request: HeartbeatRequest): T | undefined {
    const snapshot = this.snapshot;
    if (!snapshot) return undefined;
    const key = request.artifact === '' ? snapshot.defaultTrack : request.artifact;
    const track = key === null ? undefined : snapshot.tracks.get(key);
    if (!track) return undefined;
    let target: TargetAnswers<T> = track.target;
    const rollout = track.rollout;
    const route = rollout ? routeDevice(rollout, request.deviceId, request.versionHash) : undefined;
    if (rollout && route) {
      if (route === 'target' && request.versionHash !== rollout.target.hash) return undefined;
      if (route === 'stay' || (route === 'stable' && rollout.stable === null)) {
        this.counters.routed(route);
        return track.target.noUpdate;
      }
      if (route === 'stable') target = rollout.stable!;
    }
    const format = chooseFormat(request.deltaFormats, this.settings.offered);
    const decision = decide({
      target, format, versionHash: request.versionHash, store: this.store!,
      capBytes: this.settings.capBytes, allowFullDownload: this.settings.allowFullDownload,
    });
    let body: T | undefined;
    switch (decision.row) {
      case 2:
      case 7:
        body = target.noUpdate;
        break;
      case 3:
        body = target.signed.get(signedAnswerKey(request.versionHash, format));
        if (body !== undefined) this.counters.served('delta');
        break;
      case 6:
        body = target.signed.get(FULL_ANSWER);
        if (body !== undefined) this.counters.served('full');
        break;
    }
    if (body === undefined) return undefined;
    // Counted only when answered here: what goes on to the manifester is counted there.
    if (route) this.counters.routed(route);
    this.counters.decided(decision.row);
    return body;
  }
}

import { FULL_ANSWER, signedAnswerKey, type DecisionSnapshot, type TargetAnswers } from '../../messages/decision-snapshot.js';
import type { HeartbeatRequest } from '../../messages/manifester.js';
import type { TransferInfo } from '../../messages/store.js';
import { decide, type StoreQuery } from '../../shared/decision/decide.js';
import type { DecisionCounters } from '../../shared/decision/counters.js';
import { routeDevice, type RoutedDevice } from '../../shared/decision/route.js';
import type { WindowClock } from '../../shared/decision/window-clock.js';
import { chooseFormat, type DeltaFormat } from '../../shared/delta-formats.js';
import type { ManifestWire } from '../../shared/wire/keys.js';
import type { TargetingFacts } from './targeting-facts.js';
import { TRANSFER_INDEX_BYTES, TransferIndex } from './transfer-index.js';

// A front-end's copy of the manifester's decisions: it answers a heartbeat from the latest
// snapshot (src/messages/decision-snapshot.ts) with the manifester's own pure rules
// (src/shared/decision/), and says `undefined` for everything that needs the manifester: an
// unknown or unnormalized track name (the manifester resolves it or refuses it), an offer of a
// rollout's target (the manifester records who was offered what), a delta or full file not
// made yet, an answer not signed yet, a binary over the size cap (the manifester warns of it).
// The manifester answers those as before, and its next snapshot holds what it made. A rollout
// is routed here, with the device's group memberships (targeting-facts.ts), and the route
// travels with the heartbeat when it goes on.

/** What goes to the manifester: the heartbeat, with the rollout's route when one was taken. */
export class Hop {
  private constructor(readonly route: 'target' | 'stable' | 'stay' | undefined) {}
  static readonly plain = new Hop(undefined);
  static readonly target = new Hop('target');
  static readonly stable = new Hop('stable');
  static readonly stay = new Hop('stay');
}

/** Answers kept for devices outside their window (a few per target and zone a second). */
const MAX_WAIT_ANSWERS = 4096;

export interface ReplicaSettings<T> {
  readonly offered: readonly DeltaFormat[];
  /** `store.delta_max_source_mb` in bytes; 0 disables the cap. */
  readonly capBytes: number;
  readonly allowFullDownload: boolean;
  /** The transport's encoding of an answer built here (a device outside its window: its own retry_after). */
  readonly encode: (answer: ManifestWire) => T;
}

export class DecisionReplica<T> {
  private snapshot: DecisionSnapshot<T> | undefined;
  private store: StoreQuery<TransferInfo> | undefined;
  /** Answers to devices outside their window, by track and seconds: devices of one zone share them. */
  private waits = new Map<string, T>();

  constructor(
    private readonly settings: ReplicaSettings<T>,
    private readonly counters: DecisionCounters,
    private readonly clock: WindowClock,
    /** Group memberships; without them (no inventory) a group step admits nobody. */
    private readonly facts?: TargetingFacts,
  ) {}

  /** The version held, '' before the first. */
  get version(): string {
    return this.snapshot?.version ?? '';
  }

  /** What the snapshot held weighs, with the index of its transfers (0 before the first). */
  get bytes(): number {
    const snapshot = this.snapshot;
    return snapshot ? snapshot.bytes + snapshot.transfers.size * TRANSFER_INDEX_BYTES : 0;
  }

  apply(snapshot: DecisionSnapshot<T>): void {
    this.snapshot = snapshot;
    this.waits = new Map();
    const { binaries } = snapshot;
    const transfers = new TransferIndex(snapshot.transfers.values());
    this.store = {
      binarySize: (hash) => binaries.get(hash),
      delta: (from, to, format) => transfers.delta(from, to, format),
      full: (to) => transfers.full(to),
    };
  }

  /** The answer the manifester would give, or a Hop when only the manifester can give it. */
  answer(request: HeartbeatRequest): T | Hop {
    const snapshot = this.snapshot;
    if (!snapshot) return Hop.plain;
    const key = request.artifact === '' ? snapshot.defaultTrack : request.artifact;
    const track = key === null ? undefined : snapshot.tracks.get(key);
    if (!track) return Hop.plain;
    let target: TargetAnswers<T> = track.target;
    const rollout = track.rollout;
    const routed = rollout ? routeDevice(rollout, this.routedDevice(request, key!), this.clock) : undefined;
    const route = routed?.route;
    if (rollout && routed) {
      if (routed.route === 'wait') {
        this.counters.routed('wait');
        return this.waitAnswer(key!, track.target, routed.waitSeconds);
      }
      // An offer of the rollout's target: the manifester records who was offered what.
      if (routed.route === 'target' && request.versionHash !== rollout.target.hash) return Hop.target;
      if (routed.route === 'stay' || (routed.route === 'stable' && rollout.stable === null)) {
        this.counters.routed(routed.route);
        return track.target.noUpdate;
      }
      if (routed.route === 'stable') target = rollout.stable!;
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
    if (body === undefined) return route === undefined ? Hop.plain : Hop[route as 'target' | 'stable'];
    // Counted only when answered here: what goes on to the manifester is counted there.
    if (route) this.counters.routed(route);
    this.counters.decided(decision.row);
    return body;
  }

  /** The device as routing sees it: memberships judged on demand, with the attributes this heartbeat (or its last) carried. */
  private routedDevice(request: HeartbeatRequest, artifact: string): RoutedDevice {
    const facts = this.facts;
    if (!facts) return request;
    const attributes = facts.attributesOf(request.deviceId, request.attributes);
    const device = { deviceId: request.deviceId, attributes, artifact, versionHash: request.versionHash };
    return { deviceId: request.deviceId, versionHash: request.versionHash, attributes, memberOf: (group) => facts.memberOf(group, device, Date.now()) };
  }

  /**
   * Keyed by the track, not by the target's hash: two tracks may serve the same bytes, and each
   * answer names its own track and carries that track's release statement.
   */
  private waitAnswer(track: string, target: TargetAnswers<T>, seconds: number): T {
    const key = `${track}|${seconds}`;
    let body = this.waits.get(key);
    if (body === undefined) {
      if (this.waits.size >= MAX_WAIT_ANSWERS) this.waits = new Map();
      // The manifester's field order (retry_after, then the release statement): the same bytes.
      const { release, ...fields } = target.noUpdateFields;
      body = this.settings.encode({ ...fields, retry_after: seconds, ...(release ? { release } : {}) });
      this.waits.set(key, body);
    }
    return body;
  }
}

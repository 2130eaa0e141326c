import type { RolloutCommand, RolloutView } from '../../../messages/manifester.js';
import { parseTrackKey, trackKey } from '../../../shared/artifact-key.js';
import type { Logger } from '../../../shared/logger.js';
import { advance, applyAction, judgeHealth, rolloutView, setPercent } from './rollout.js';
import type { TrackAdmin } from '../track-admin.js';
import type { TrackTable } from '../tracks.js';

// Drives the rollouts of every track: the operator's commands, and once a tick the health
// check and the timer, in that order (a rollout that is failing pauses before it widens).
//
//   tick ─▶ fleet.rolloutHealth({target, sinceMs}[]) ─▶ judgeHealth ─▶ maybe paused
//        └▶ advance (step due? start time come?)                   ─▶ next step / complete / running
//   each change ─▶ TrackAdmin.updateRollout ─▶ table + state file

/** The fleet actor's health counts: the latest report per device for the target, received at or after `sinceMs` (Unix milliseconds). */
export type RolloutHealthSource = (queries: readonly { targetHash: string; sinceMs: number }[]) => Promise<readonly { targetHash: string; success: number; failure: number }[]>;

export interface RolloutControlDeps {
  readonly tracks: TrackTable;
  readonly admin: TrackAdmin;
  readonly log: Logger;
  /** Undefined when the server runs without a fleet inventory: no automatic pause then. */
  readonly health: RolloutHealthSource | undefined;
  readonly tickMs: number;
}

export class RolloutControl {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private healthFailing = false;

  constructor(private readonly deps: RolloutControlDeps) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.ticking) return;
      this.ticking = this.tick().finally(() => (this.ticking = undefined));
    }, this.deps.tickMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
  }

  command(command: RolloutCommand): Promise<RolloutView> {
    const key = trackKey(parseTrackKey(command.artifact));
    return this.deps.admin.updateRollout(key, (r) => {
      const now = Date.now();
      return 'percent' in command ? setPercent(r, command.percent, now) : applyAction(r, command.action, command.rollback, now);
    });
  }

  view(artifact: string): RolloutView | null {
    const key = trackKey(parseTrackKey(artifact));
    const rollout = this.deps.tracks.get(key)?.rollout;
    return rollout ? rolloutView(rollout) : null;
  }

  /** One round: health first, then the timer. Errors are logged; the next tick tries again. */
  async tick(): Promise<void> {
    try {
      await this.checkHealth();
      for (const track of this.deps.tracks.all()) {
        const r = track.rollout;
        // A scheduled rollout starts on the same timer.
        if ((r?.state !== 'running' && r?.state !== 'scheduled') || advance(r, Date.now()) === r) continue;
        await this.deps.admin.updateRollout(track.key, (current) => advance(current, Date.now()));
      }
    } catch (err) {
      this.deps.log.warn({ err }, 'rollout tick failed; trying again on the next one');
    }
  }

  private async checkHealth(): Promise<void> {
    const health = this.deps.health;
    if (!health) return;
    const running = this.deps.tracks.all().flatMap((t) => (t.rollout?.state === 'running' ? [{ key: t.key, rollout: t.rollout }] : []));
    if (running.length === 0) return;
    // To the millisecond: a report received right after a start or resume counts, one before it does not.
    const queries = running.map(({ rollout }) => ({ targetHash: rollout.target.hash, sinceMs: rollout.healthSinceMs }));
    let answers;
    try {
      answers = await health(queries);
      if (this.healthFailing) this.deps.log.info('rollout health counts are available again');
      this.healthFailing = false;
    } catch (err) {
      // Without counts no rollout can be judged; the timer goes on (logged once per outage).
      if (!this.healthFailing) this.deps.log.warn({ err }, 'cannot read rollout health counts from the fleet inventory');
      this.healthFailing = true;
      return;
    }
    for (const [i, { key, rollout }] of running.entries()) {
      const counts = answers.find((a) => a.targetHash === rollout.target.hash);
      if (!counts) continue;
      const judged = { success: counts.success, failure: counts.failure };
      // Applied only to the rollout that was asked about: a resume or a new publish meanwhile starts afresh.
      await this.deps.admin.updateRollout(key, (current) =>
        current.target.hash === queries[i]!.targetHash && current.healthSinceMs === rollout.healthSinceMs ? judgeHealth(current, judged) : current);
    }
  }
}

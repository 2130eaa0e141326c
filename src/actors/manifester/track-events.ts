import type { TrackView } from '../../messages/manifester.js';
import type { WebhookEvent, WebhookEventType } from '../../shared/webhooks/events.js';
import { rolloutView, type Rollout } from './rollout/rollout.js';
import type { Track } from './tracks.js';

// Which webhook events a change of the track table is (docs/operations.md, "Webhooks"). Pure:
// the track admin calls these once a change is recorded, with what it was and what it is now.

/** A new target on a track, and the start of its rollout when it has one. */
export function publishEvents(track: Track, atMs: number): WebhookEvent[] {
  const events: WebhookEvent[] = [{
    type: 'updater.track.published',
    data: { artifact: track.key, version: track.version, hash: track.hash, size: track.size },
    atMs,
  }];
  if (track.rollout) {
    const type = track.rollout.state === 'scheduled' ? 'updater.rollout.scheduled' : 'updater.rollout.started';
    events.push({ type, data: { artifact: track.key, rollout: rolloutView(track.rollout, atMs) }, atMs });
  }
  return events;
}

export function removedEvent(track: TrackView, atMs: number): WebhookEvent {
  return { type: 'updater.track.removed', data: { artifact: track.artifact, version: track.version, hash: track.hash }, atMs };
}

/** The event a rollout's change is, if any (a new report count alone is none). */
export function rolloutEvent(artifact: string, before: Rollout, next: Rollout, atMs: number): WebhookEvent | undefined {
  let type: WebhookEventType | undefined;
  if (next.state !== before.state) {
    type = next.state === 'paused' ? 'updater.rollout.paused'
      // From scheduled, it starts: the start time came.
      : next.state === 'running' ? (before.state === 'scheduled' ? 'updater.rollout.started' : 'updater.rollout.resumed')
        : next.state === 'scheduled' ? 'updater.rollout.resumed'
          : next.state === 'complete' ? 'updater.rollout.completed'
            : 'updater.rollout.aborted';
  } else if (next.state === 'running' && (next.percent !== before.percent || next.step !== before.step)) {
    type = 'updater.rollout.step';
  }
  if (!type) return undefined;
  // A step event names the group of the step reached, when it is a group step.
  const step = next.plan.steps[next.step];
  const group = type === 'updater.rollout.step' && typeof step === 'object' ? { group: step.group } : {};
  return { type, data: { artifact, rollout: rolloutView(next, atMs), ...group }, atMs };
}

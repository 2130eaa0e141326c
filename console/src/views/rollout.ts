import { html } from 'htm/preact';
import { useRef, useState } from 'preact/hooks';
import { post } from '../api.js';
import { useAction } from './action.js';
import { absoluteTime, percent, relativeTime } from '../format.js';
import type { Rollout } from '../types.js';
import { Hash } from './common.js';
import { stepLabel } from '../targeting.js';
import { can } from '../identity.js';

export function RolloutBadge({ rollout }: { rollout: Rollout }) {
  return html`<span class=${`badge state-${rollout.state}`}>${rollout.state} · ${rollout.percent} %</span>`;
}

/** Failures over reports of the target, or undefined before any report. */
export function failureRate(r: Rollout): number | undefined {
  const total = r.reports.success + r.reports.failure;
  return total === 0 ? undefined : r.reports.failure / total;
}

const PAUSE_REASONS = { failure_rate: 'paused itself: too many failures', operator: 'paused by an operator' } as const;

/**
 * The rollout of one track: where it stands and the operator's controls. Every action is a
 * POST /admin/rollout; the answer replaces what is shown at once, the poll confirms it.
 */
export function RolloutPanel({ artifact, rollout, onChanged }: { artifact: string; rollout: Rollout; onChanged(): void }) {
  const action = useAction();
  const busy = action.busy;
  const [target, setTarget] = useState('');
  const dialog = useRef<HTMLDialogElement>(null);
  const rollback = useRef<HTMLInputElement>(null);

  const act = (body: Record<string, unknown>, done: string) => action.run(async () => {
    await post<Rollout>('/admin/rollout', { artifact, ...body });
    onChanged();
    return done;
  });

  const rate = failureRate(rollout);
  const live = rollout.state === 'running' || rollout.state === 'paused' || rollout.state === 'scheduled';
  const window = rollout.window;
  const threshold = rollout.max_failure_rate;
  const over = rate !== undefined && rate > threshold;

  const setPercent = (event: Event) => {
    event.preventDefault();
    const value = Number(target);
    if (target === '' || !Number.isInteger(value) || value < 0 || value > 100) {
      action.fail('The percent must be a whole number from 0 to 100.');
      return;
    }
    void act({ percent: value }, `Percent set to ${value} %.`);
  };

  const confirmAbort = (event: Event) => {
    event.preventDefault();
    const back = rollback.current?.checked === true;
    dialog.current?.close();
    void act({ action: 'abort', rollback: back }, back ? 'Rollout aborted; devices on the target are offered the stable build.' : 'Rollout aborted.');
  };

  return html`
    <section class="panel rollout" aria-labelledby="rollout-heading">
      <h2 id="rollout-heading">Rollout of ${rollout.target_version}</h2>
      <dl class="facts">
        <div><dt>State</dt><dd><span class=${`badge state-${rollout.state}`} data-testid="rollout-state">${rollout.state}</span>
          ${rollout.paused_reason ? html` <span class="note">${PAUSE_REASONS[rollout.paused_reason]}</span>` : null}
          ${rollout.state === 'aborted' && rollout.rollback ? html` <span class="note">rolled back: devices on the target are offered the stable build</span>` : null}
          ${rollout.started_at ? html` <span class="note">started ${absoluteTime(rollout.started_at)}</span>` : null}</dd></div>
        <div><dt>Devices offered the target</dt><dd>
          <span class="percent" data-testid="rollout-percent">${rollout.percent} %</span>
          <progress max="100" value=${rollout.percent} aria-label="rollout percent">${rollout.percent} %</progress>
          <span class="note" data-testid="rollout-steps">steps ${rollout.steps.map((s, i) => (i === rollout.step && rollout.state !== 'scheduled' ? html`<strong>${stepLabel(s)}</strong>` : stepLabel(s))).reduce<unknown[]>((a, s, i) => (i ? [...a, ' → ', s] : [s]), [])}, ${rollout.step_interval === 'manual' ? 'advanced by hand' : `every ${rollout.step_interval}`}</span>
        </dd></div>
        <div><dt>Failure rate</dt><dd class=${over ? 'bad' : ''} data-testid="failure-rate">
          ${rate === undefined ? 'no reports yet' : percent(rate)}
          ${html` <span class="note">threshold ${percent(threshold)}, judged from ${rollout.min_reports} reports</span>`}
          ${rate !== undefined ? html`<span class="note"> (${rollout.reports.failure} failed of ${rollout.reports.success + rollout.reports.failure})</span>` : null}</dd></div>
        ${rollout.state === 'scheduled' ? html`<div><dt>Starts</dt><dd data-testid="rollout-starts">scheduled: nobody is offered it before ${absoluteTime(rollout.next_step_at ?? rollout.start_at ?? 0)} <span class="note">(${relativeTime(rollout.next_step_at ?? rollout.start_at ?? 0)})</span></dd></div>` : null}
        ${window ? html`<div><dt>Window</dt><dd data-testid="rollout-window">${window.days.length === 7 ? 'every day' : window.days.join(', ')} ${window.start}–${window.end}, ${window.tz === 'device' ? "each device's own time" : window.tz}
          <span class="note">steps move only inside it; devices outside theirs are told when to come back</span></dd></div>` : null}
        <div><dt>Next step</dt><dd data-testid="rollout-next">${rollout.state === 'running' && rollout.next_step_at ? html`${absoluteTime(rollout.next_step_at)} <span class="note">(${relativeTime(rollout.next_step_at)})</span>` : rollout.state === 'running' && rollout.step_interval === 'manual' ? 'when an operator advances it' : '—'}</dd></div>
        <div><dt>Target</dt><dd><${Hash} value=${rollout.target_hash} /></dd></div>
        <div><dt>Stable</dt><dd>${rollout.stable_hash ? html`<${Hash} value=${rollout.stable_hash} />` : 'none (first rollout of the track)'}</dd></div>
      </dl>
      ${live && can('POST', '/admin/rollout') ? html`
        <div class="actions">
          ${rollout.state === 'running' || rollout.state === 'scheduled' ? html`<button type="button" disabled=${busy} onClick=${() => act({ action: 'pause' }, 'Rollout paused.')}>Pause</button>` : null}
          ${rollout.state === 'running' ? html`<button type="button" disabled=${busy} onClick=${() => act({ action: 'advance' }, 'Rollout advanced to its next step.')}>Advance to the next step</button>` : null}
          ${rollout.state === 'paused' ? html`<button type="button" disabled=${busy} onClick=${() => act({ action: 'resume' }, 'Rollout resumed.')}>Resume</button>` : null}
          <button type="button" class="danger" disabled=${busy} onClick=${() => dialog.current?.showModal()}>Abort…</button>
          <form class="inline" onSubmit=${setPercent}>
            <label for="set-percent">Percent</label>
            <input id="set-percent" type="number" min="0" max="100" step="1" inputmode="numeric" value=${target}
              onInput=${(e: Event) => setTarget((e.target as HTMLInputElement).value)} />
            <button type="submit" disabled=${busy}>Set percent</button>
          </form>
        </div>` : null}
      ${action.status()}
      ${can('POST', '/admin/rollout') ? html`<dialog ref=${dialog} aria-labelledby="abort-heading">
        <form method="dialog" onSubmit=${confirmAbort}>
          <h2 id="abort-heading">Abort the rollout of ${rollout.target_version}?</h2>
          <p>No more devices will be offered ${rollout.target_version} on ${artifact}. This cannot be resumed.</p>
          <label class="check"><input type="checkbox" ref=${rollback} disabled=${!rollout.stable_hash} />
            Roll back: offer the devices already on ${rollout.target_version} the stable build${rollout.stable_hash ? '' : ' (there is none on this track)'}</label>
          <div class="actions">
            <button type="button" onClick=${() => dialog.current?.close()}>Cancel</button>
            <button type="submit" class="danger">Abort rollout</button>
          </div>
        </form>
      </dialog>` : null}
    </section>`;
}

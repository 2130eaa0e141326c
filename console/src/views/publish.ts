import { html } from 'htm/preact';
import { useRef } from 'preact/hooks';
import { post } from '../api.js';
import { useAction } from './action.js';
import { parseSteps, startAtSeconds, trackFields, windowBody } from '../targeting.js';

// Publishing a new build on a track, with a rollout: steps that mix groups and percents, a
// manual or timed step interval, a start time and a maintenance window (docs/rollouts.md,
// "Targeting"). The server checks every field; its error names the one it refused.

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

export function PublishForm({ artifact, onPublished }: { artifact: string; onPublished(): void }) {
  const action = useAction();
  const form = useRef<HTMLFormElement>(null);

  const submit = (event: Event) => {
    event.preventDefault();
    const data = new FormData(form.current!);
    const text = (key: string) => String(data.get(key) ?? '').trim();
    const source = text('source');
    const steps = text('steps');
    const startAt = startAtSeconds(text('start_at'));
    const window = windowBody({ days: data.getAll('days').map(String), start: text('window_start'), end: text('window_end'), tz: text('window_tz') });
    const rollout = steps === '' ? undefined : {
      steps: parseSteps(steps), step_interval: text('step_interval') || '1h',
      ...(startAt !== undefined ? { start_at: startAt } : {}), ...(window ? { window } : {}),
    };
    const body = {
      ...trackFields(artifact), version: text('version'),
      ...(/^[0-9a-f]{64}$/.test(source) ? { hash: source } : { binary: source }),
      ...(rollout ? { rollout } : {}),
    };
    void action.run(async () => {
      await post('/admin/artifacts', body);
      onPublished();
      return rollout ? `Published ${body.version} with a rollout.` : `Published ${body.version} to every device.`;
    });
  };

  return html`
    <section class="panel" aria-labelledby="publish-heading">
      <h2 id="publish-heading">Publish a new build</h2>
      <form ref=${form} class="publish-form" onSubmit=${submit} autocomplete="off">
        <div class="fields">
          <label for="publish-version">Version</label>
          <input id="publish-version" name="version" required maxlength="128" placeholder="1.6.0" />
          <label for="publish-source">Binary path on the server, or the hash of an uploaded binary</label>
          <input id="publish-source" name="source" required placeholder="/srv/builds/app-1.6.0" />
        </div>
        <fieldset>
          <legend>Rollout (leave the steps empty to offer it to every device at once)</legend>
          <label for="publish-steps">Steps: group names and rising percents ending at 100</label>
          <input id="publish-steps" name="steps" placeholder="canary, 5, 25, 100" />
          <label for="publish-interval">Step interval ("manual": advance by hand)</label>
          <input id="publish-interval" name="step_interval" placeholder="1h" />
          <label for="publish-start">Start time (your browser's time zone; empty: at once)</label>
          <input id="publish-start" name="start_at" type="datetime-local" />
          <fieldset class="window">
            <legend>Maintenance window (empty: any time; no day ticked: every day)</legend>
            <div class="days" role="group" aria-label="Days (none ticked: every day)">${DAYS.map((d) => html`<label class="check"><input type="checkbox" name="days" value=${d} /> ${d}</label>`)}</div>
            <label for="publish-window-start">From</label>
            <input id="publish-window-start" name="window_start" type="time" />
            <label for="publish-window-end">To</label>
            <input id="publish-window-end" name="window_end" type="time" />
            <label for="publish-window-tz">Time zone ("device": each device's own; or Europe/Berlin, UTC)</label>
            <input id="publish-window-tz" name="window_tz" placeholder="device" />
          </fieldset>
        </fieldset>
        <button type="submit" disabled=${action.busy}>Publish</button>
      </form>
      ${action.status()}
    </section>`;
}

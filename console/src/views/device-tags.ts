import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { put } from '../api.js';
import { useAction } from './action.js';
import { can } from '../identity.js';
import { parseTags } from '../targeting.js';
import type { Device } from '../types.js';

// A device's attributes (what it says of itself) and tags (what an operator says of it), with
// the tag editor for a role that may change them: PUT /admin/devices/{id}/tags replaces them.

export function DeviceTargeting({ device, onChanged }: { device: Device; onChanged(): void }) {
  const [text, setText] = useState<string | undefined>();
  const action = useAction();
  const tags = device.tags ?? [];
  const attributes = Object.entries(device.attributes ?? {});

  const save = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const answer = await put<Device>(`/admin/devices/${encodeURIComponent(device.device_id)}/tags`, { tags: parseTags(text ?? tags.join(' ')) });
      setText(undefined);
      onChanged();
      return `Tags saved: ${(answer.tags ?? []).join(', ') || 'none'}.`;
    });
  };

  return html`
    <section class="panel" aria-labelledby="targeting-heading">
      <h2 id="targeting-heading">Tags and attributes</h2>
      <dl class="facts">
        <div><dt>Tags</dt><dd data-testid="device-tags">${tags.length ? tags.map((t) => html`<span class="badge">${t}</span> `) : 'none'}</dd></div>
        <div><dt>Attributes</dt><dd data-testid="device-attributes">${attributes.length ? attributes.map(([k, v]) => html`<code>${k}=${v}</code> `) : 'none sent'}</dd></div>
      </dl>
      ${can('PUT', '/admin/devices/:id/tags') ? html`
        <form class="inline" onSubmit=${save}>
          <label for="device-tags-input">Tags (space or comma separated)</label>
          <input id="device-tags-input" value=${text ?? tags.join(' ')} onInput=${(e: Event) => setText((e.target as HTMLInputElement).value)} />
          <button type="submit" disabled=${action.busy}>Save tags</button>
        </form>` : null}
      ${action.status()}
    </section>`;
}

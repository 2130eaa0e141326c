import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { ApiError, get, query } from '../api.js';
import { relativeTime } from '../format.js';
import { usePoll } from '../poll.js';
import { href, navigate } from '../router.js';
import type { Device, DevicePage, Fleet, TrackList } from '../types.js';
import { Freshness, Hash, Heading, Outcome, TableBox } from './common.js';

const NOT_SEEN = [
  ['', 'any time'], ['5m', '5 minutes'], ['1h', '1 hour'], ['24h', '24 hours'], ['7d', '7 days'], ['30d', '30 days'],
] as const;
const PAGE = 100;

/** The fleet's devices, filtered by track, version and "not seen for", with an id search. */
export function DevicesView({ params }: { params: URLSearchParams }) {
  const artifact = params.get('artifact') ?? '';
  const versionHash = params.get('version_hash') ?? '';
  const notSeen = params.get('not_seen') ?? '';
  const after = params.get('after') ?? '';
  const group = params.get('group') ?? '';
  const filters = { artifact, version_hash: versionHash, not_seen: notSeen, group };
  const go = (changes: Record<string, string>) => navigate(href(['devices'], { ...filters, ...changes }));

  const tracks = usePoll(() => get<TrackList>('/admin/artifacts'), 'devices:tracks');
  const fleet = usePoll(() => (artifact ? get<Fleet>(`/admin/fleet${query({ artifact })}`) : Promise.resolve(undefined)), `devices:fleet:${artifact}`);
  const polled = usePoll(() => get<DevicePage>(`/admin/devices${query({ artifact, version_hash: versionHash, not_seen_for: notSeen, group, limit: PAGE, after })}`),
    `devices:${artifact}:${versionHash}:${notSeen}:${group}:${after}`);

  return html`
    <${Heading}>Devices</${Heading}>
    <${FindDevice} />
    <form class="filters" onSubmit=${(e: Event) => e.preventDefault()} aria-label="Filter devices">
      <div><label for="filter-track">Track</label>
        <select id="filter-track" value=${artifact} onChange=${(e: Event) => go({ artifact: (e.target as HTMLSelectElement).value, version_hash: '', after: '' })}>
          <option value="">all tracks</option>
          ${(tracks.data?.artifacts ?? []).map((t) => html`<option value=${t.artifact}>${t.artifact}</option>`)}
        </select></div>
      <div><label for="filter-version">Version</label>
        <select id="filter-version" value=${versionHash} disabled=${!artifact} onChange=${(e: Event) => go({ version_hash: (e.target as HTMLSelectElement).value, after: '' })}>
          <option value="">${artifact ? 'all versions' : 'choose a track first'}</option>
          ${(fleet.data?.versions ?? []).map((v) => html`<option value=${v.version_hash}>${v.version || 'unknown'} (${v.version_hash.slice(0, 8)}, ${v.devices})</option>`)}
          ${versionHash && !fleet.data?.versions.some((v) => v.version_hash === versionHash) ? html`<option value=${versionHash}>${versionHash.slice(0, 8)}</option>` : null}
        </select></div>
      <div><label for="filter-not-seen">Not seen for</label>
        <select id="filter-not-seen" value=${notSeen} onChange=${(e: Event) => go({ not_seen: (e.target as HTMLSelectElement).value, after: '' })}>
          ${NOT_SEEN.map(([value, text]) => html`<option value=${value}>${text}</option>`)}
        </select></div>
    </form>
    ${group ? html`<p class="note" data-testid="group-filter">Members of the group <strong>${group}</strong> now. <a href=${href(['devices'], { ...filters, group: '', after: '' })}>Show all devices</a></p>` : null}
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    ${polled.data ? html`
      <p class="note">${polled.data.devices.length} device${polled.data.devices.length === 1 ? '' : 's'} on this page, in id order.</p>
      <${DeviceTable} devices=${polled.data.devices} />
      <nav class="pager" aria-label="Pages">
        ${after ? html`<a href=${href(['devices'], filters)}>First page</a>` : null}
        ${polled.data.next ? html`<a href=${href(['devices'], { ...filters, after: polled.data.next })}>Next page</a>` : null}
      </nav>` : null}`;
}

function DeviceTable({ devices }: { devices: Device[] }) {
  if (devices.length === 0) return html`<p>No device matches.</p>`;
  return html`<${TableBox} label="Devices">
    <table>
      <thead><tr><th scope="col">Device</th><th scope="col">Track</th><th scope="col">Version</th><th scope="col">Transport</th>
        <th scope="col">Last seen</th><th scope="col">Last report</th></tr></thead>
      <tbody>${devices.map((d) => html`
        <tr key=${d.device_id}>
          <th scope="row"><a href=${href(['devices', d.device_id])}>${d.device_id}</a></th>
          <td>${d.artifact}</td>
          <td>${d.version || html`<${Hash} value=${d.version_hash} />`}</td>
          <td>${d.transport}</td>
          <td title=${new Date(d.last_seen * 1000).toISOString()}>${relativeTime(d.last_seen)}</td>
          <td>${d.last_report ? html`<${Outcome} success=${d.last_report.success} />${d.last_report.rollback_reason ? `: ${d.last_report.rollback_reason}` : ''}` : '—'}</td>
        </tr>`)}</tbody>
    </table>
  </${TableBox}>`;
}

/** Opens a device's page by its exact id. */
function FindDevice() {
  const [id, setId] = useState('');
  const [message, setMessage] = useState('');
  const submit = async (event: Event) => {
    event.preventDefault();
    const wanted = id.trim();
    if (!wanted) return;
    try {
      await get(`/admin/devices/${encodeURIComponent(wanted)}`);
      navigate(href(['devices', wanted]));
    } catch (err) {
      setMessage((err as ApiError).status === 404 ? `No device with the id ${wanted}.` : (err as ApiError).message);
    }
  };
  return html`<form class="search" role="search" onSubmit=${submit}>
    <label for="device-id">Device id</label>
    <input id="device-id" type="search" value=${id} onInput=${(e: Event) => setId((e.target as HTMLInputElement).value)} autocomplete="off" spellcheck=${false} />
    <button type="submit">Open</button>
    <span role="status" class="message">${message}</span>
  </form>`;
}

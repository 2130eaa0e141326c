import { html } from 'htm/preact';
import { get } from '../api.js';
import { absoluteTime, bytes, keyFingerprint, relativeTime } from '../format.js';
import { usePoll } from '../poll.js';
import { href } from '../router.js';
import type { DeviceDetail } from '../types.js';
import { Freshness, Hash, Heading, Outcome, TableBox } from './common.js';
import { DeviceTargeting } from './device-tags.js';

/** One device: what it runs, what it reported, newest report first. */
export function DeviceView({ deviceId }: { deviceId: string }) {
  const polled = usePoll(() => get<DeviceDetail>(`/admin/devices/${encodeURIComponent(deviceId)}`), `device:${deviceId}`);
  const d = polled.data;
  const missing = polled.error?.status === 404;
  return html`
    <p class="crumbs"><a href=${href(['devices'])}>Devices</a> /</p>
    <${Heading}>${deviceId}</${Heading}>
    ${missing ? html`<p role="alert">No device with this id is in the inventory.</p>` : html`<${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />`}
    ${d ? html`
      <dl class="facts">
        <div><dt>Track</dt><dd><a href=${href(['tracks', d.artifact])}>${d.artifact}</a></dd></div>
        <div><dt>Version</dt><dd>${d.version || '—'} <${Hash} value=${d.version_hash} /></dd></div>
        <div><dt>Hardware</dt><dd>${d.hw_info.arch} / ${d.hw_info.os}, ${bytes(d.hw_info.free_ram)} RAM free, ${bytes(d.hw_info.free_disk)} disk free</dd></div>
        <div><dt>Transport</dt><dd>${d.transport || '—'}</dd></div>
        <div><dt>Enrollment</dt><dd>${d.auth_state ?? 'never authenticated'}</dd></div>
        <div><dt>Key fingerprint</dt><dd><code title=${d.public_key ?? ''}>${keyFingerprint(d.public_key)}</code></dd></div>
        <div><dt>First seen</dt><dd>${absoluteTime(d.first_seen)}</dd></div>
        <div><dt>Last seen</dt><dd>${absoluteTime(d.last_seen)} <span class="note">(${relativeTime(d.last_seen)})</span></dd></div>
      </dl>
      <${DeviceTargeting} device=${d} onChanged=${polled.reload} />
      <section class="panel" aria-labelledby="reports-heading">
        <h2 id="reports-heading">Update reports</h2>
        ${d.reports.length === 0 ? html`<p>This device has not reported an update.</p>` : html`
          <${TableBox} label="Update reports">
            <table>
              <thead><tr><th scope="col">Received</th><th scope="col">Outcome</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Rollback reason</th></tr></thead>
              <tbody>${d.reports.map((r) => html`
                <tr>
                  <td>${absoluteTime(r.received_at)}</td>
                  <td><${Outcome} success=${r.success} /></td>
                  <td><${Hash} value=${r.previous_hash} /></td>
                  <td><${Hash} value=${r.new_hash} /></td>
                  <td>${r.rollback_reason || '—'}</td>
                </tr>`)}</tbody>
            </table>
          </${TableBox}>`}
      </section>` : null}`;
}

import { html } from 'htm/preact';
import { get, query } from '../api.js';
import { absoluteTime, relativeTime } from '../format.js';
import { usePoll } from '../poll.js';
import { href } from '../router.js';
import type { FleetReport } from '../types.js';
import { Freshness, Hash, Heading, TableBox } from './common.js';

const SHOWN = 100;

/** The newest failed update reports across the fleet, with their rollback reasons. */
export function FailuresView() {
  const polled = usePoll(() => get<{ reports: FleetReport[] }>(`/admin/reports${query({ success: 'false', limit: SHOWN })}`), 'failures');
  const reports = polled.data?.reports;
  return html`
    <${Heading}>Failed updates</${Heading}>
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    ${reports ? html`
      <p class="note">The newest failure reports across the fleet (${SHOWN} at most), newest first.</p>
      ${reports.length === 0 ? html`<p>No device has reported a failed update.</p>` : html`
        <${TableBox} label="Failed updates">
          <table>
            <thead><tr><th scope="col">Received</th><th scope="col">Device</th><th scope="col">Track</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Rollback reason</th></tr></thead>
            <tbody>${reports.map((r) => html`
              <tr>
                <td title=${absoluteTime(r.received_at)}>${relativeTime(r.received_at)}</td>
                <th scope="row"><a href=${href(['devices', r.device_id])}>${r.device_id}</a></th>
                <td>${r.artifact ? html`<a href=${href(['tracks', r.artifact])}>${r.artifact}</a>` : '—'}</td>
                <td><${Hash} value=${r.previous_hash} /></td>
                <td><${Hash} value=${r.new_hash} /></td>
                <td>${r.rollback_reason || '—'}</td>
              </tr>`)}</tbody>
          </table>
        </${TableBox}>`}` : null}`;
}

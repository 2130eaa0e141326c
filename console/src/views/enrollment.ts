import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { ApiError, get, post } from '../api.js';
import { absoluteTime, keyFingerprint } from '../format.js';
import { usePoll } from '../poll.js';
import { href } from '../router.js';
import type { DevicePage } from '../types.js';
import { Freshness, Heading, TableBox } from './common.js';

// Devices waiting for an operator (devices.enrollment: manual): each with the fingerprint of
// the key it came with, to compare with what the factory recorded, and Accept / Reject. After
// an anonymous burst, Delete or Reject every pending device (or those whose id begins with a
// prefix) in one call rather than one row at a time (POST /admin/devices/delete|reject).

export function EnrollmentView() {
  const polled = usePoll(() => get<DevicePage>('/admin/devices?auth_state=pending&limit=1000'), 'enrollment:pending');
  const [message, setMessage] = useState('');
  const decide = async (id: string, action: 'accept' | 'reject') => {
    try {
      await post(`/admin/devices/${encodeURIComponent(id)}/${action}`, {});
      setMessage(`${id} ${action === 'accept' ? 'accepted' : 'rejected'}.`);
    } catch (err) {
      setMessage(`${id}: ${(err as ApiError).message}`);
    }
    polled.reload();
  };
  const [prefix, setPrefix] = useState('');
  const settle = async (action: 'delete' | 'reject') => {
    const which = prefix === '' ? 'every pending device' : `every pending device whose id begins with "${prefix}"`;
    const consequence = action === 'delete' ? 'Their ids may enroll again.' : 'Their ids stay refused until accepted.';
    if (!confirm(`${action === 'delete' ? 'Delete' : 'Reject'} ${which}? ${consequence}`)) return;
    try {
      const filter = prefix === '' ? { auth_state: 'pending' } : { auth_state: 'pending', id_prefix: prefix };
      const done = await post<{ deleted?: number; rejected?: number }>(`/admin/devices/${action}`, { filter });
      setMessage(`${action === 'delete' ? `${done.deleted} pending devices deleted` : `${done.rejected} pending devices rejected`}.`);
    } catch (err) {
      setMessage((err as ApiError).message);
    }
    polled.reload();
  };
  const devices = polled.data?.devices ?? [];
  return html`
    <${Heading}>Pending devices</${Heading}>
    <p class="note">Devices whose key waits for an operator. Compare each fingerprint with the one the device was made with before accepting it.</p>
    <p role="status" class="message">${message}</p>
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    ${polled.data && devices.length === 0 ? html`<p>No device is waiting.</p>` : null}
    ${devices.length > 0 ? html`
      <${TableBox} label="Pending devices">
        <table>
          <thead><tr><th scope="col">Device</th><th scope="col">Key fingerprint</th><th scope="col">First asked</th><th scope="col">Decision</th></tr></thead>
          <tbody>${devices.map((d) => html`
            <tr key=${d.device_id}>
              <th scope="row"><a href=${href(['devices', d.device_id])}>${d.device_id}</a></th>
              <td><code title=${d.public_key ?? ''}>${keyFingerprint(d.public_key)}</code></td>
              <td>${absoluteTime(d.first_seen)}</td>
              <td>
                <button type="button" onClick=${() => decide(d.device_id, 'accept')} aria-label=${`Accept ${d.device_id}`}>Accept</button>
                <button type="button" class="danger" onClick=${() => decide(d.device_id, 'reject')} aria-label=${`Reject ${d.device_id}`}>Reject</button>
              </td>
            </tr>`)}</tbody>
        </table>
      </${TableBox}>
      <form class="bulk" onSubmit=${(e: Event) => e.preventDefault()}>
        <label>Id prefix (empty: all) <input value=${prefix} onInput=${(e: Event) => setPrefix((e.target as HTMLInputElement).value)} /></label>
        <button type="button" onClick=${() => settle('delete')}>Delete all pending</button>
        <button type="button" class="danger" onClick=${() => settle('reject')}>Reject all pending</button>
      </form>` : null}`;
}

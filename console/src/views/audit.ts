import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { get, query } from '../api.js';
import { absoluteTime, relativeTime } from '../format.js';
import { usePoll } from '../poll.js';
import { Freshness, Heading, TableBox } from './common.js';
import type { AuditEntry } from '../../../src/messages/operators.js';

// The audit log: every admin change and every refusal, newest first. The first page refreshes
// itself; "Older" walks back with the server's `next` cursor. The row type is the server's own.

/** On the wire `next` is text: the `after` of the next page. */
interface AuditPage {
  entries: AuditEntry[];
  next: string | null;
}

const PAGE = 50;

export function AuditView() {
  const [cursors, setCursors] = useState<string[]>([]);
  const after = cursors.at(-1);
  const polled = usePoll(() => get<AuditPage>(`/admin/audit${query({ limit: PAGE, after })}`), `audit:${after ?? ''}`);
  const page = polled.data;
  return html`
    <${Heading}>Audit log</${Heading}>
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    <p class="note">Every admin request that changed something, and every refused one (401, 403, 429), newest first.</p>
    ${page ? html`
      ${page.entries.length === 0 ? html`<p>Nothing recorded${after ? ' before these' : ' yet'}.</p>` : html`
        <${TableBox} label="Audit log">
          <table>
            <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Role</th><th scope="col">Request</th><th scope="col">Answer</th><th scope="col">Detail</th></tr></thead>
            <tbody>${page.entries.map((e) => html`
              <tr data-testid="audit-row">
                <td title=${absoluteTime(e.at)}>${relativeTime(e.at)}</td>
                <th scope="row">${e.token_name ?? html`<span class="note">no valid token</span>`}</th>
                <td>${e.role ?? '—'}</td>
                <td><code>${e.method} ${e.path}</code></td>
                <td class=${e.status >= 400 ? 'bad' : 'ok'}>${e.status}</td>
                <td>${e.detail || '—'}</td>
              </tr>`)}</tbody>
          </table>
        </${TableBox}>`}
      <div class="actions">
        ${cursors.length > 0 ? html`<button type="button" onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>` : null}
        ${page.next ? html`<button type="button" onClick=${() => setCursors([...cursors, page.next!])}>Older</button>` : null}
      </div>` : null}`;
}

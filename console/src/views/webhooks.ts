import { html } from 'htm/preact';
import { get } from '../api.js';
import { absoluteTime, relativeTime } from '../format.js';
import { usePoll } from '../poll.js';
import type { WebhookState } from '../types.js';
import { Freshness, Heading, TableBox } from './common.js';

/** Each webhook's outbox: what waits, what was delivered, and the latest failed attempts. */
export function WebhooksView() {
  const polled = usePoll(() => get<WebhookState>('/admin/webhooks'), 'webhooks');
  const state = polled.data;
  return html`
    <${Heading}>Webhooks</${Heading}>
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    ${state ? html`
      ${state.webhooks.length === 0 ? html`<p>No webhook is configured (the <code>webhooks</code> key of the server's configuration).</p>` : html`
        <${TableBox} label="Webhooks">
          <table>
            <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Waiting</th><th scope="col">Oldest waiting</th><th scope="col">Next attempt</th><th scope="col">Delivered</th><th scope="col">Last delivery</th><th scope="col">Given up</th></tr></thead>
            <tbody>${state.webhooks.map((w) => html`
              <tr>
                <th scope="row"><code class="url">${w.url}</code></th>
                <td>${w.events.map((e) => html`<span class="tag">${e.replace(/^updater\./, '')}</span> `)}</td>
                <td class=${w.pending > 0 ? 'warn' : ''}>${w.pending}</td>
                <td title=${absoluteTime(w.oldest_pending_at)}>${relativeTime(w.oldest_pending_at)}</td>
                <td title=${absoluteTime(w.next_attempt_at)}>${w.next_attempt_at ? relativeTime(w.next_attempt_at) : '—'}</td>
                <td>${w.delivered}</td>
                <td title=${absoluteTime(w.last_delivered_at)}>${relativeTime(w.last_delivered_at)}</td>
                <td class=${w.failed > 0 ? 'bad' : ''}>${w.failed}</td>
              </tr>`)}</tbody>
          </table>
        </${TableBox}>
        <h2>Failed attempts</h2>
        ${state.failures.length === 0 ? html`<p>No delivery is failing.</p>` : html`
          <p class="note">Events whose last attempt failed, newest first: still retrying (each webhook waits for its oldest event), or given up after 24 hours.</p>
          <${TableBox} label="Failed attempts">
            <table>
              <thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Webhook</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">State</th></tr></thead>
              <tbody>${state.failures.map((f) => html`
                <tr>
                  <th scope="row" title=${f.event_id}>${relativeTime(f.at)}</th>
                  <td>${f.type.replace(/^updater\./, '')}</td>
                  <td><code class="url">${f.webhook}</code></td>
                  <td class="num">${f.attempts}</td>
                  <td>${f.last_error ?? '—'}</td>
                  <td class=${f.state === 'failed' ? 'bad' : 'warn'}>${f.state === 'failed' ? 'given up' : `retry ${relativeTime(f.next_attempt_at)}`}</td>
                </tr>`)}</tbody>
            </table>
          </${TableBox}>`}`}` : null}`;
}

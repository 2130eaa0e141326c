import { html } from 'htm/preact';
import { get } from '../api.js';
import { bytes } from '../format.js';
import { usePoll } from '../poll.js';
import { href } from '../router.js';
import type { TrackList } from '../types.js';
import { Freshness, Hash, Heading, TableBox } from './common.js';
import { RolloutBadge } from './rollout.js';

/** Every track: its target, size, history, whether it is the default, where it came from. */
export function TracksView() {
  const polled = usePoll(() => get<TrackList>('/admin/artifacts'), 'tracks');
  const list = polled.data;
  return html`
    <${Heading}>Tracks</${Heading}>
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    ${list && list.artifacts.length === 0 ? html`<p>No tracks yet: publish one with <code>POST /admin/artifacts</code> or the configuration.</p>` : null}
    ${list && list.artifacts.length > 0 ? html`
      <${TableBox} label="Tracks">
        <table>
          <thead><tr><th scope="col">Track</th><th scope="col">Version</th><th scope="col">Target hash</th><th scope="col">Size</th>
            <th scope="col">History</th><th scope="col">Default</th><th scope="col">Source</th><th scope="col">Rollout</th></tr></thead>
          <tbody>
            ${list.artifacts.map((t) => html`
              <tr key=${t.artifact}>
                <th scope="row"><a href=${href(['tracks', t.artifact])}>${t.artifact}</a></th>
                <td>${t.version}</td>
                <td><${Hash} value=${t.hash} /></td>
                <td class="num">${bytes(t.size)}</td>
                <td>${t.history.length === 0 ? '—' : html`<details><summary>${t.history.length} earlier</summary>
                  <ol class="history">${t.history.map((h) => html`<li><${Hash} value=${h} /></li>`)}</ol></details>`}</td>
                <td>${t.artifact === list.default ? html`<span class="badge">default</span>` : ''}</td>
                <td>${t.source}</td>
                <td>${t.rollout ? html`<${RolloutBadge} rollout=${t.rollout} />` : '—'}</td>
              </tr>`)}
          </tbody>
        </table>
      </${TableBox}>` : null}`;
}

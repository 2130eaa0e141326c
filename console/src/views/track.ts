import { html } from 'htm/preact';
import { ApiError, get, query } from '../api.js';
import { bytes, percent, versionLabels } from '../format.js';
import { usePoll } from '../poll.js';
import { href } from '../router.js';
import type { Fleet, Track, TrackList } from '../types.js';
import { BarChart } from './chart.js';
import { Freshness, Hash, Heading, TableBox } from './common.js';
import { RolloutPanel } from './rollout.js';
import { PublishForm } from './publish.js';
import { can } from '../identity.js';

interface TrackData {
  track: Track | undefined;
  isDefault: boolean;
  fleet: Fleet | undefined;
  /** Why the inventory could not be read (say, FLEET_DISABLED); the track is shown anyway. */
  fleetError: ApiError | undefined;
}

async function loadTrack(artifact: string): Promise<TrackData> {
  const [list, fleet] = await Promise.all([
    get<TrackList>('/admin/artifacts'),
    get<Fleet>(`/admin/fleet${query({ artifact })}`).catch((err: ApiError) => err),
  ]);
  return {
    track: list.artifacts.find((t) => t.artifact === artifact),
    isDefault: list.default === artifact,
    ...(fleet instanceof ApiError ? { fleet: undefined, fleetError: fleet } : { fleet, fleetError: undefined }),
  };
}

/** One track: its target, how its devices are spread over versions, and its rollout. */
export function TrackView({ artifact }: { artifact: string }) {
  const polled = usePoll(() => loadTrack(artifact), `track:${artifact}`);
  const { track, fleet, fleetError, isDefault } = polled.data ?? {};
  const rollout = track?.rollout ?? fleet?.rollout ?? null;
  const labels = versionLabels(fleet?.versions ?? [], { [track?.hash ?? '']: track?.version ?? '', [rollout?.target_hash ?? '']: rollout?.target_version ?? '' });
  const total = fleet?.devices ?? 0;

  return html`
    <p class="crumbs"><a href=${href(['tracks'])}>Tracks</a> /</p>
    <${Heading}>${artifact}</${Heading}>
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    ${polled.data && !track ? html`<p role="alert">No track ${artifact} on this server.</p>` : null}
    ${track ? html`
      <dl class="facts">
        <div><dt>Target version</dt><dd>${track.version}</dd></div>
        <div><dt>Target hash</dt><dd><${Hash} value=${track.hash} /></dd></div>
        <div><dt>Size</dt><dd>${bytes(track.size)}</dd></div>
        <div><dt>Source</dt><dd>${track.source}${isDefault ? html` <span class="badge">default</span>` : ''}</dd></div>
        ${fleet ? html`
          <div><dt>Reports, last 24 h</dt><dd>${fleet.reports_24h.success} succeeded, <span class=${fleet.reports_24h.failure ? 'bad' : ''}>${fleet.reports_24h.failure} failed</span></dd></div>
          <div><dt>Devices</dt><dd><a href=${href(['devices'], { artifact })}>${total} on this track</a></dd></div>` : null}
      </dl>` : null}
    ${rollout && track ? html`<${RolloutPanel} artifact=${artifact} rollout=${rollout} onChanged=${polled.reload} />` : null}
    ${track && track.source !== 'config' && can('POST', '/admin/artifacts') ? html`<${PublishForm} artifact=${artifact} onPublished=${polled.reload} />` : null}
    ${fleetError ? html`<p class="error" role="alert">The inventory cannot be read: ${fleetError.message} (${fleetError.code})</p>` : null}
    ${fleet ? html`
      <section class="panel" aria-labelledby="versions-heading">
        <h2 id="versions-heading">Versions on devices</h2>
        ${fleet.versions.length === 0 ? html`<p>No device has checked in on this track yet.</p>` : html`
          <${BarChart} label=${`Devices per version on ${artifact}`}
            bars=${fleet.versions.map((v) => ({ label: labels.get(v.version_hash)!, value: v.devices, highlight: v.version_hash === (rollout?.target_hash ?? track?.hash) }))} />
          <${TableBox} label="Devices per version">
            <table>
              <thead><tr><th scope="col">Version</th><th scope="col">Hash</th><th scope="col" class="num">Devices</th><th scope="col" class="num">Share</th></tr></thead>
              <tbody>${fleet.versions.map((v) => html`
                <tr key=${v.version_hash}>
                  <th scope="row"><a href=${href(['devices'], { artifact, version_hash: v.version_hash })}>${labels.get(v.version_hash)}</a></th>
                  <td><${Hash} value=${v.version_hash} /></td>
                  <td class="num">${v.devices}</td>
                  <td class="num">${total ? percent(v.devices / total) : '—'}</td>
                </tr>`)}</tbody>
            </table>
          </${TableBox}>`}
      </section>` : null}
    ${track && track.history.length > 0 ? html`
      <section class="panel" aria-labelledby="history-heading">
        <h2 id="history-heading">Earlier targets</h2>
        <ol class="history">${track.history.map((h) => html`<li><${Hash} value=${h} /></li>`)}</ol>
      </section>` : null}`;
}


import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import { signOut } from '../api.js';
import { href, useRoute } from '../router.js';
import { DeviceView } from './device.js';
import { DevicesView } from './devices.js';
import { EnrollmentView } from './enrollment.js';
import { GroupsView } from './groups.js';
import { FailuresView } from './failures.js';
import { TrackView } from './track.js';
import { TracksView } from './tracks.js';
import { AuditView } from './audit.js';
import { TokensView } from './tokens.js';
import { can, identity } from '../identity.js';
import { WebhooksView } from './webhooks.js';

const SECTIONS = [
  { id: 'tracks', label: 'Tracks' },
  { id: 'devices', label: 'Devices' },
  { id: 'groups', label: 'Groups', needs: '/admin/groups' },
  { id: 'failures', label: 'Failures' },
  { id: 'enrollment', label: 'Enrollment' },
  { id: 'tokens', label: 'Tokens', needs: '/admin/tokens' },
  { id: 'audit', label: 'Audit', needs: '/admin/audit' },
  { id: 'webhooks', label: 'Webhooks', needs: '/admin/webhooks' },
] as const;

/** The sections the signed-in role may read: a section whose list it may not GET is not shown. */
function allowedSections() {
  return SECTIONS.filter((s) => !('needs' in s) || can('GET', s.needs));
}

/** The frame around every view: skip link, navigation, sign out, and the routed view. */
export function Layout() {
  const route = useRoute();
  const [section = 'tracks', id] = route.parts;
  const main = useRef<HTMLElement>(null);
  const routeKey = location.hash;

  // After a navigation, keyboard and screen-reader users start at the new view's heading.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [routeKey]);

  let view;
  if (section === 'tracks' && id) view = html`<${TrackView} artifact=${id} />`;
  else if (section === 'devices' && id) view = html`<${DeviceView} deviceId=${id} />`;
  else if (section === 'devices') view = html`<${DevicesView} params=${route.params} />`;
  else if (section === 'groups' && can('GET', '/admin/groups')) view = html`<${GroupsView} />`;
  else if (section === 'failures') view = html`<${FailuresView} />`;
  else if (section === 'enrollment') view = html`<${EnrollmentView} />`;
  else if (section === 'tokens' && can('GET', '/admin/tokens')) view = html`<${TokensView} />`;
  else if (section === 'audit' && can('GET', '/admin/audit')) view = html`<${AuditView} />`;
  else if (section === 'webhooks' && can('GET', '/admin/webhooks')) view = html`<${WebhooksView} />`;
  else view = html`<${TracksView} />`;

  return html`
    <a class="skip" href="#main" onClick=${(e: Event) => { e.preventDefault(); main.current?.querySelector<HTMLElement>('h1')?.focus(); }}>Skip to content</a>
    <header class="top">
      <span class="brand">updater</span>
      <nav aria-label="Sections">
        <ul>
          ${allowedSections().map((s) => html`<li><a href=${href([s.id])} aria-current=${section === s.id ? 'page' : undefined}>${s.label}</a></li>`)}
        </ul>
      </nav>
      <span class="who" data-testid="signed-in-as">${identity()?.token_name} <span class="badge">${identity()?.role}</span></span>
      <button type="button" class="sign-out" onClick=${() => signOut('operator')}>Sign out</button>
    </header>
    <main id="main" ref=${main}>${view}</main>`;
}

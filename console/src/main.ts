import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import '../style.css';
import { whenSignedOut, type SignOutReason } from './api.js';
import { forgetIdentity, identity, loadIdentity } from './identity.js';
import { storedToken } from './session.js';
import { Layout } from './views/layout.js';
import { SignIn } from './views/sign-in.js';

// The console: a sign-in form until a token is stored for this tab, then the views.
//
//   sign-in ──whoami ok──▶ layout (nav by role, sign out) ─▶ tracks │ track │ devices │ device │ failures │ tokens │ audit
//      ▲                                                 │
//      └──────── any 401/429 forgets the token ──────────┘

function App() {
  const [signedIn, setSignedIn] = useState(() => storedToken() !== null);
  const [reason, setReason] = useState<SignOutReason | undefined>();
  const [known, setKnown] = useState(() => identity() !== undefined);
  useEffect(() => {
    whenSignedOut((why) => {
      forgetIdentity();
      setKnown(false);
      setReason(why);
      setSignedIn(false);
    });
  }, []);
  // After a reload the token is in the tab's storage but its role is not: ask once.
  useEffect(() => {
    if (signedIn && !known) loadIdentity().then(() => setKnown(true), () => undefined);
  }, [signedIn, known]);
  if (!signedIn) return html`<${SignIn} reason=${reason} onSignedIn=${() => { setKnown(true); setSignedIn(true); }} />`;
  if (!known) return html`<p class="loading">Loading…</p>`;
  return html`<${Layout} />`;
}

render(html`<${App} />`, document.getElementById('app')!);

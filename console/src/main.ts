import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import '../style.css';
import { whenSignedOut, type SignOutReason } from './api.js';
import { storedToken } from './session.js';
import { Layout } from './views/layout.js';
import { SignIn } from './views/sign-in.js';

// The console: a sign-in form until a token is stored for this tab, then the views.
//
//   sign-in ──token ok──▶ layout (nav, sign out) ─▶ tracks │ track │ devices │ device │ failures
//      ▲                                                 │
//      └──────── any 401/429 forgets the token ──────────┘

function App() {
  const [signedIn, setSignedIn] = useState(() => storedToken() !== null);
  const [reason, setReason] = useState<SignOutReason | undefined>();
  useEffect(() => {
    whenSignedOut((why) => {
      setReason(why);
      setSignedIn(false);
    });
  }, []);
  if (!signedIn) return html`<${SignIn} reason=${reason} onSignedIn=${() => setSignedIn(true)} />`;
  return html`<${Layout} />`;
}

render(html`<${App} />`, document.getElementById('app')!);

import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type SignOutReason } from '../api.js';
import { storeToken } from '../session.js';
import { loadIdentity } from '../identity.js';

const REASONS: Record<SignOutReason, string> = {
  refused: 'The server refused the token. Sign in again.',
  throttled: 'Too many failed attempts: the server is refusing admin calls for a moment. Wait a few seconds, then sign in again.',
  operator: 'Signed out.',
};

/** Asks for the admin token, checks it with one admin call, and keeps it for this tab only. */
export function SignIn({ reason, onSignedIn }: { reason?: SignOutReason; onSignedIn(): void }) {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState(reason ? REASONS[reason] : '');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);

  const submit = async (event: Event) => {
    event.preventDefault();
    const token = input.current?.value.trim() ?? '';
    if (!token) {
      setMessage('Enter the admin token.');
      return;
    }
    setBusy(true);
    try {
      // Checked before it is stored: a wrong token never reaches sessionStorage. Any role
      // may sign in; the views then show only what it may do.
      await loadIdentity(token);
      storeToken(token);
      if (input.current) input.current.value = '';
      onSignedIn();
    } catch (err) {
      const status = err instanceof ApiError ? err.status : 0;
      setMessage(status === 401 ? 'That token was refused.' : status === 429 ? REASONS.throttled : `The server could not be asked: ${(err as Error).message}`);
      setBusy(false);
      input.current?.select();
    }
  };

  return html`
    <main class="sign-in">
      <h1>updater console</h1>
      <form onSubmit=${submit} method="post" autocomplete="off">
        <label for="token">Admin token</label>
        <input id="token" name="token" type="password" ref=${input} required spellcheck=${false}
          autocomplete="off" aria-describedby="token-help sign-in-message" />
        <p id="token-help" class="hint">The token from <code>admin.token_file</code>, or an operator token of any role. It is kept in this browser tab only and sent in a header, never in a link.</p>
        <button type="submit" disabled=${busy}>${busy ? 'Checking…' : 'Sign in'}</button>
        <p id="sign-in-message" role="alert" class="message">${message}</p>
      </form>
    </main>`;
}

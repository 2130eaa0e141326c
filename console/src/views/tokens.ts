import { html } from 'htm/preact';
import { useRef, useState } from 'preact/hooks';
import { ApiError, del, get, post } from '../api.js';
import { absoluteTime, relativeTime } from '../format.js';
import { can } from '../identity.js';
import { usePoll } from '../poll.js';
import { Freshness, Heading, TableBox } from './common.js';
import type { OperatorTokenView } from '../../../src/messages/operators.js';
import { ROLES } from '../../../src/shared/admin-roles.js';

// Operator tokens (admin role): the list, a form that creates one and shows its secret once,
// and a revoke button per token. The secret lives in this component's state only until the
// operator dismisses it; it is never stored or put in a URL.

type TokenEntry = OperatorTokenView;

interface Created extends TokenEntry {
  token: string;
}

export function TokensView() {
  const polled = usePoll(() => get<{ tokens: TokenEntry[] }>('/admin/tokens'), 'tokens');
  const [created, setCreated] = useState<Created | undefined>();
  const [message, setMessage] = useState<{ text: string; error: boolean } | undefined>();
  const [busy, setBusy] = useState(false);
  const name = useRef<HTMLInputElement>(null);
  const role = useRef<HTMLSelectElement>(null);
  const expires = useRef<HTMLInputElement>(null);
  const now = Date.now() / 1000;

  const create = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const expiresIn = expires.current?.value.trim();
      const answer = await post<Created>('/admin/tokens', { name: name.current?.value.trim() ?? '', role: role.current?.value, ...(expiresIn ? { expires_in: expiresIn } : {}) });
      setCreated(answer);
      setMessage(undefined);
      if (name.current) name.current.value = '';
      if (expires.current) expires.current.value = '';
      polled.reload();
    } catch (err) {
      const e = err as ApiError;
      setMessage({ text: `${e.message} (${e.code})`, error: true });
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (token: TokenEntry) => {
    if (!confirm(`Revoke the token ${token.name} (${token.role})? Whatever uses it is refused from now on.`)) return;
    try {
      await del<TokenEntry>(`/admin/tokens/${encodeURIComponent(token.id)}`);
      setMessage({ text: `Token ${token.name} revoked.`, error: false });
      polled.reload();
    } catch (err) {
      const e = err as ApiError;
      setMessage({ text: `${e.message} (${e.code})`, error: true });
    }
  };

  const tokens = polled.data?.tokens;
  return html`
    <${Heading}>Operator tokens</${Heading}>
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    ${created ? html`
      <section class="panel secret" aria-labelledby="secret-heading" data-testid="new-token">
        <h2 id="secret-heading">Token ${created.name} (${created.role}) created</h2>
        <p>Copy it now: it is shown only this once, and the server keeps only its hash.</p>
        <input type="text" readonly value=${created.token} aria-label="New token" data-testid="new-token-secret"
          onFocus=${(e: Event) => (e.target as HTMLInputElement).select()} />
        <div class="actions"><button type="button" onClick=${() => setCreated(undefined)}>I have copied it</button></div>
      </section>` : null}
    ${can('POST', '/admin/tokens') ? html`
      <form class="panel token-form" onSubmit=${create} autocomplete="off">
        <h2>New token</h2>
        <label for="token-name">Name</label>
        <input id="token-name" ref=${name} required maxlength="64" placeholder="ci-builds-2026-12" />
        <label for="token-role">Role</label>
        <select id="token-role" ref=${role}>${ROLES.map((r) => html`<option value=${r}>${r}</option>`)}</select>
        <label for="token-expires">Expires in</label>
        <input id="token-expires" ref=${expires} placeholder="90d (empty: never)" />
        <button type="submit" disabled=${busy}>Create token</button>
      </form>` : null}
    <p class=${message?.error ? 'message error' : 'message'} role="status">${message?.text ?? ''}</p>
    ${tokens ? (tokens.length === 0 ? html`<p>No operator tokens yet: only the configured token works.</p>` : html`
      <${TableBox} label="Operator tokens">
        <table>
          <thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Id</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>${tokens.map((tk) => html`
            <tr data-testid="token-row">
              <th scope="row">${tk.name}</th>
              <td><span class="badge">${tk.role}</span></td>
              <td><code>${tk.id}</code></td>
              <td title=${absoluteTime(tk.created_at)}>${relativeTime(tk.created_at)}</td>
              <td>${tk.expires_at === null ? 'never' : html`<span class=${tk.expires_at <= now ? 'bad' : ''} title=${absoluteTime(tk.expires_at)}>${tk.expires_at <= now ? 'expired ' : ''}${relativeTime(tk.expires_at)}</span>`}</td>
              <td>${can('DELETE', '/admin/tokens/:id') ? html`<button type="button" class="danger" onClick=${() => revoke(tk)}>Revoke ${tk.name}</button>` : null}</td>
            </tr>`)}</tbody>
        </table>
      </${TableBox}>`) : null}`;
}

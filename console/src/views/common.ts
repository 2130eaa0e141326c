import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../api.js';
import { relativeTime, shortHash } from '../format.js';

/** The view's heading; focusable so that a navigation can move focus to it. */
export function Heading({ children }: { children?: unknown }) {
  return html`<h1 tabindex="-1">${children}</h1>`;
}

/** "Updated 3 s ago", or the error of the last refresh; announced politely. */
export function Freshness({ updatedAt, error }: { updatedAt: number | undefined; error: ApiError | undefined }) {
  const [, setNow] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return html`<p class="freshness">
    ${error ? html`<span class="error" role="alert">Refresh failed: ${error.message} (${error.code})</span> ` : null}
    ${updatedAt ? html`<span>Updated ${relativeTime(Math.floor(updatedAt / 1000))}; refreshes every few seconds.</span>` : error ? null : html`<span>Loading…</span>`}
  </p>`;
}

/** A hash shown short; the whole hash is in the title and in the text a screen reader gets. */
export function Hash({ value }: { value: string | null | undefined }) {
  if (!value) return html`<span>—</span>`;
  return html`<code class="hash" title=${value}><span aria-hidden="true">${shortHash(value)}</span><span class="sr-only">${value}</span></code>`;
}

/** A table that scrolls sideways on a narrow screen instead of squeezing its columns. */
export function TableBox({ label, children }: { label: string; children?: unknown }) {
  return html`<div class="table-box" role="region" aria-label=${label} tabindex="0">${children}</div>`;
}

export function Outcome({ success }: { success: boolean }) {
  return success ? html`<span class="ok">success</span>` : html`<span class="bad">failure</span>`;
}

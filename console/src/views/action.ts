import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { ApiError } from '../api.js';

// An operator's action and what came of it: busy while it runs (its buttons are disabled),
// then the success text, or the server's error with its code (the server names the field it
// refused), announced in one status line.

export interface Action {
  busy: boolean;
  /** Runs `work`; its result is the text shown on success. */
  run(work: () => Promise<string>): Promise<void>;
  /** A problem the form found before asking the server. */
  fail(text: string): void;
  /** The status line. */
  status(): unknown;
}

export function useAction(): Action {
  const [message, setMessage] = useState<{ text: string; error: boolean } | undefined>();
  const [busy, setBusy] = useState(false);
  return {
    busy,
    async run(work) {
      setBusy(true);
      try {
        setMessage({ text: await work(), error: false });
      } catch (err) {
        const e = err as ApiError;
        setMessage({ text: `${e.message} (${e.code})`, error: true });
      } finally {
        setBusy(false);
      }
    },
    fail: (text) => setMessage({ text, error: true }),
    status: () => html`<p class=${message?.error ? 'message error' : 'message'} role="status">${message?.text ?? ''}</p>`,
  };
}

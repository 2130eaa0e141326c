import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

// Every view keeps its data fresh by asking again every few seconds: no reload, no overlap
// (the next request waits for the previous answer), and no polling while the tab is hidden.

export const REFRESH_MS = 4000;

export interface Polled<T> {
  data: T | undefined;
  error: ApiError | undefined;
  /** When the last successful answer arrived (ms), for the "updated" note. */
  updatedAt: number | undefined;
  reload(): void;
}

export function usePoll<T>(load: () => Promise<T>, key: string): Polled<T> {
  const [state, setState] = useState<{ key: string; data?: T; error?: ApiError; updatedAt?: number }>({ key });
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (document.hidden) {
        timer = setTimeout(run, REFRESH_MS);
        return;
      }
      try {
        const data = await loadRef.current();
        if (!cancelled) setState({ key, data, updatedAt: Date.now() });
      } catch (err) {
        const error = err instanceof ApiError ? err : new ApiError(0, 'CLIENT', String(err));
        if (!cancelled) setState((previous) => ({ ...(previous.key === key ? previous : { key }), error }));
      }
      if (!cancelled) timer = setTimeout(run, REFRESH_MS);
    };
    void run();
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }, [key, tick]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  // Data of another key (the previous view's) is never shown.
  const own = state.key === key;
  return { data: own ? state.data : undefined, error: own ? state.error : undefined, updatedAt: own ? state.updatedAt : undefined, reload };
}

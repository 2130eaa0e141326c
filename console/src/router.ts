import { useEffect, useMemo, useState } from 'preact/hooks';

// Views live in the URL fragment (#/tracks/app%2Flinux%2Farm64), so the server sees only
// /console/ and a reload or a shared link opens the same view. Nothing secret goes here.

export interface Route {
  /** The path segments after '#/', decoded. */
  parts: string[];
  params: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const [path = '', search = ''] = hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').filter((p) => p !== '').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  return { parts, params: new URLSearchParams(search) };
}

export function href(parts: string[], params?: Record<string, string | undefined>): string {
  const path = parts.map(encodeURIComponent).join('/');
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params ?? {})) if (value) search.set(key, value);
  const text = search.toString();
  return `#/${path}${text ? `?${text}` : ''}`;
}

export function navigate(to: string): void {
  if (location.hash !== to) location.hash = to;
}

export function useRoute(): Route {
  // The hash itself is the state (a string: setting it unchanged renders nothing), and the
  // effect reads it again once subscribed. Effects run after the browser paints, so a change
  // made between the first render and the subscription (a deep link followed while a slow
  // first render runs) fired its hashchange with no listener: without the second read the
  // view would stay on the old route for good.
  const [hash, setHash] = useState(() => location.hash);
  useEffect(() => {
    const update = () => setHash(location.hash);
    addEventListener('hashchange', update);
    update();
    return () => removeEventListener('hashchange', update);
  }, []);
  return useMemo(() => parseHash(hash), [hash]);
}

import { forgetToken, storedToken } from './session.js';

// Every admin call goes through here. A 401 (wrong or missing token) or a 429 (the server's
// bucket of failed attempts is empty, which a valid token never drains) ends the session:
// the token is forgotten and the app shows the sign-in form with the reason.

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export type SignOutReason = 'refused' | 'throttled' | 'operator';

let onSignedOut: (reason: SignOutReason) => void = () => undefined;

export function whenSignedOut(handler: (reason: SignOutReason) => void): void {
  onSignedOut = handler;
}

export function signOut(reason: SignOutReason): void {
  forgetToken();
  onSignedOut(reason);
}

/** One admin request with `token` (default: the stored one). */
export async function request<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, token = storedToken()): Promise<T> {
  if (!token) {
    signOut('refused');
    throw new ApiError(401, 'UNAUTHORIZED', 'not signed in');
  }
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch {
    throw new ApiError(0, 'UNREACHABLE', 'the server cannot be reached');
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (response.ok) return json as T;
  const error = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
  const failure = new ApiError(response.status, error?.code ?? `HTTP_${response.status}`, error?.message ?? response.statusText);
  if (response.status === 401) signOut('refused');
  else if (response.status === 429) signOut('throttled');
  throw failure;
}

export const get = <T>(path: string) => request<T>('GET', path);
export const post = <T>(path: string, body: unknown) => request<T>('POST', path, body);
export const del = <T>(path: string) => request<T>('DELETE', path);
export const put = <T>(path: string, body: unknown) => request<T>('PUT', path, body);

/** A query string from the defined, non-empty values. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

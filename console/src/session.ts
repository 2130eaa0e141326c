// The admin token lives in sessionStorage only: it is gone when the tab closes, it is never
// written to localStorage, a cookie, a URL or a log, and every request sends it in a header.

const TOKEN_KEY = 'updater-admin-token';

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage disabled: the operator signs in again on each load
  }
}

export function storeToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken(): void {
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // nothing stored
  }
}

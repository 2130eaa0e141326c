// The one reading of an `Authorization: Bearer <token>` header (RFC 6750), for device tokens
// (src/shared/device-identity/token.ts) and admin tokens (src/actors/http/admin/) alike, so a
// header one accepts the other reads the same way.

const BEARER = 'bearer';
const SPACE = 0x20;
const TAB = 0x09;

/**
 * The token of an `Authorization: Bearer <token>` header (the scheme in any case, then spaces
 * or tabs); undefined when absent, another scheme, or more than one word. Scanned by hand: a
 * regex match allocates its result on every device request.
 */
export function bearerToken(header: string): string | undefined {
  for (let i = 0; i < BEARER.length; i++) {
    // | 0x20 folds an ASCII capital to its small letter, and no other character onto one.
    if ((header.charCodeAt(i) | 0x20) !== BEARER.charCodeAt(i)) return undefined;
  }
  let start = BEARER.length;
  while (header.charCodeAt(start) === SPACE || header.charCodeAt(start) === TAB) start++;
  let end = header.length;
  while (end > start && (header.charCodeAt(end - 1) === SPACE || header.charCodeAt(end - 1) === TAB)) end--;
  if (start === BEARER.length || start === end) return undefined;
  const token = header.slice(start, end);
  return /\s/.test(token) ? undefined : token;
}

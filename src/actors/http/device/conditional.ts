// Conditional downloads (RFC 9110 §13). A transfer's strong ETag is its hash (the manifest's
// delta_hash): the bytes behind a name never change, so the hash is a perfect validator.

export function transferETag(hash: string): string {
  return `"${hash}"`;
}

/** If-None-Match: true when the client already holds these bytes (answer 304). Weak comparison. */
export function noneMatch(header: string, etag: string): boolean {
  if (header.trim() === '') return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

/**
 * If-Range: true when a Range header may be honoured. Only an exact strong ETag qualifies; a
 * stale or weak tag, or a date (we send no Last-Modified), gets the whole representation.
 */
export function rangeApplies(header: string, etag: string): boolean {
  const value = header.trim();
  return value === '' || value === etag;
}

// Display helpers: sizes, hashes, times. Times from the API are Unix seconds.

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function shortHash(hash: string | null | undefined): string {
  return hash ? hash.slice(0, 12) : '—';
}

export function percent(fraction: number): string {
  return `${(fraction * 100).toFixed(fraction > 0 && fraction < 0.1 ? 1 : 0)} %`;
}

export function absoluteTime(seconds: number | null | undefined): string {
  if (!seconds) return '—';
  const d = new Date(seconds * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** "3 min ago", "in 40 s": the distance from now, in the largest whole unit. */
export function relativeTime(seconds: number | null | undefined, nowMs = Date.now()): string {
  if (!seconds) return '—';
  const delta = Math.round(seconds - nowMs / 1000);
  const span = Math.abs(delta);
  const [value, unit] = span < 60 ? [span, 's'] : span < 3600 ? [Math.floor(span / 60), 'min'] : span < 86400 ? [Math.floor(span / 3600), 'h'] : [Math.floor(span / 86400), 'd'];
  if (span < 2) return 'now';
  return delta < 0 ? `${value} ${unit} ago` : `in ${value} ${unit}`;
}

/**
 * A label per version hash: the version the server published it as when it knows it (the
 * target, the rollout's target), else the version devices report; a short hash is added
 * where two hashes would otherwise read the same.
 */
export function versionLabels(versions: readonly { version_hash: string; version: string }[], known: Record<string, string>): Map<string, string> {
  const names = versions.map((v) => [v.version_hash, known[v.version_hash] || v.version || ''] as const);
  const counts = new Map<string, number>();
  for (const [, name] of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return new Map(names.map(([hash, name]) => [hash, name && counts.get(name) === 1 ? name : `${name || 'unknown'} ${hash.slice(0, 6)}`]));
}

/**
 * A device key as an operator compares it: its first 16 hex characters in groups of four (what
 * `updater pubkey --key FILE` prints starts the same way); the whole key is in the title.
 */
export function keyFingerprint(publicKey: string | null | undefined): string {
  return publicKey ? (publicKey.slice(0, 16).match(/.{4}/g) ?? []).join(':') : '—';
}

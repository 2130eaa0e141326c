// Reads the server's /metrics page into the figures the soak judges: RSS, each budget's gauge,
// and per actor thread the V8 heap and the event-loop counters (src/shared/runtime-metrics.ts).

export interface HeapFigures {
  used: number;
  total: number;
  external: number;
  malloced: number;
  /** Array-buffer backing stores the thread allocated and has not freed (live or awaiting collection). */
  array_buffers: number;
}

export interface Scrape {
  /** Seconds since the soak started. */
  readonly at: number;
  readonly rss: number;
  readonly targetCache: number;
  readonly hotCache: number;
  readonly signedManifests: number;
  /** What the front-ends' decision snapshots weigh, all threads together. */
  readonly decisionSnapshots: number;
  readonly coapDedup: number;
  readonly diffsInFlight: number;
  readonly diffThreads: number;
  readonly fleetBuffer: number;
  readonly heap: Record<string, HeapFigures>;
  readonly blockedSeconds: Record<string, number>;
  readonly busySeconds: Record<string, number>;
  /**
   * The server's own heartbeat latency, as it measured it (handler start to answer), per
   * transport: cumulative counts by bucket upper bound in seconds. Harness queueing is not in it.
   */
  readonly serverHeartbeat: Record<'http' | 'coap', ReadonlyMap<number, number>>;
}

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    out.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return out;
}

export function toScrape(at: number, text: string): Scrape {
  const samples = parseMetrics(text);
  const one = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
  const heap: Record<string, HeapFigures> = {};
  const blockedSeconds: Record<string, number> = {};
  const busySeconds: Record<string, number> = {};
  for (const s of samples) {
    const actor = s.labels.actor;
    if (!actor) continue;
    if (s.name === 'updater_actor_heap_bytes') (heap[actor] ??= { used: 0, total: 0, external: 0, malloced: 0, array_buffers: 0 })[s.labels.kind as keyof HeapFigures] = s.value;
    else if (s.name === 'updater_event_loop_blocked_seconds_total') blockedSeconds[actor] = s.value;
    else if (s.name === 'updater_event_loop_busy_seconds_total') busySeconds[actor] = s.value;
  }
  const buckets = (name: string) => {
    const out = new Map<number, number>();
    for (const s of samples) {
      if (s.name !== name || s.labels.route !== 'heartbeat' || s.labels.le === undefined) continue;
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      out.set(le, (out.get(le) ?? 0) + s.value);
    }
    return out;
  };
  return {
    at,
    serverHeartbeat: { http: buckets('updater_http_request_seconds_bucket'), coap: buckets('updater_coap_request_seconds_bucket') },
    rss: one('updater_process_resident_memory_bytes'),
    targetCache: one('updater_cache_bytes', { cache: 'target' }),
    hotCache: one('updater_cache_bytes', { cache: 'hot_transfer' }),
    signedManifests: one('updater_signed_manifest_cache_entries'),
    decisionSnapshots: one('updater_decision_snapshot_bytes'),
    coapDedup: one('updater_coap_dedup_cache_bytes'),
    diffsInFlight: one('updater_diff_jobs', { state: 'in_flight' }),
    diffThreads: one('updater_diff_threads'),
    fleetBuffer: one('updater_fleet_buffer_bytes', { kind: 'used' }),
    heap,
    blockedSeconds,
    busySeconds,
  };
}

export interface BucketSummary {
  readonly count: number;
  /** The upper bound (ms) of the bucket holding each percentile: a conservative figure. */
  readonly p50_le_ms: number;
  readonly p99_le_ms: number;
  readonly p999_le_ms: number;
}

/** Percentiles of what the server recorded between two scrapes (cumulative buckets). */
export function bucketPercentiles(start: ReadonlyMap<number, number> | undefined, end: ReadonlyMap<number, number>): BucketSummary {
  const bounds = [...end.keys()].sort((a, b) => a - b);
  const counts = bounds.map((le) => (end.get(le) ?? 0) - (start?.get(le) ?? 0));
  const total = counts[counts.length - 1] ?? 0;
  const at = (q: number) => {
    const i = counts.findIndex((c) => c >= q * total);
    return total === 0 || i < 0 ? 0 : bounds[i]! * 1000;
  };
  return { count: total, p50_le_ms: at(0.5), p99_le_ms: at(0.99), p999_le_ms: at(0.999) };
}

export async function scrape(baseUrl: string, at: number): Promise<Scrape | undefined> {
  try {
    const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) return undefined;
    return toScrape(at, await response.text());
  } catch {
    return undefined;
  }
}

/** How many tracks' staged rollouts are in each state, from `updater_rollout_state` in /metrics text. */
export function countRolloutStates(metricsText: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const m of metricsText.matchAll(/^updater_rollout_state\{[^}]*state="([a-z_]+)"[^}]*\} 1$/gm)) counts[m[1]!] = (counts[m[1]!] ?? 0) + 1;
  return counts;
}

export async function rolloutStates(baseUrl: string): Promise<Record<string, number> | undefined> {
  try {
    const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
    return response.ok ? countRolloutStates(await response.text()) : undefined;
  } catch {
    return undefined;
  }
}

/** What each thread holds alive, from POST /admin/memory (each runs a full collection first). */
export interface LiveReading {
  /** Seconds since the soak started. */
  readonly at: number;
  readonly threads: Readonly<Record<string, { readonly heap_used: number; readonly external: number }>>;
  /** The process's RSS (/proc VmRSS) once the memory those collections freed has gone back (soak.ts). */
  readonly rss?: number;
}

export async function liveReading(baseUrl: string, token: string, at: number): Promise<LiveReading | undefined> {
  try {
    const response = await fetch(`${baseUrl}/admin/memory`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000) });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { threads: LiveReading['threads'] };
    return { at, threads: body.threads };
  } catch {
    return undefined;
  }
}

/** The server process's memory by kind from /proc (Linux): anonymous, file-backed, shared. */
export async function procMemory(pid: number | undefined): Promise<Record<string, number> | undefined> {
  if (pid === undefined) return undefined;
  try {
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(`/proc/${pid}/status`, 'utf8');
    const out: Record<string, number> = {};
    for (const key of ['VmRSS', 'RssAnon', 'RssFile', 'RssShmem', 'Threads']) {
      const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text);
      if (m) out[key] = key === 'Threads' ? Number(m[1]) : Number(m[1]) * 1024;
    }
    return out;
  } catch {
    return undefined;
  }
}

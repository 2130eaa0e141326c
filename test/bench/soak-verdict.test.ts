import t from 'tap';
import type { HeapFigures, Scrape } from '../../bench/soak/scrape.js';
import { bucketPercentiles, countRolloutStates, toScrape } from '../../bench/soak/scrape.js';
import { fillReadings, judgePlateau } from '../../bench/soak/verdict.js';

const MB = 1024 * 1024;
const heap = (used: number): HeapFigures => ({ used, total: used + 4 * MB, external: 3 * MB, malloced: MB, array_buffers: MB });

/** A plateau of `seconds` samples: RSS breathing around 250 MB, the manifester's heap growing by `leakPerSecond`. */
function plateau(seconds: number, leakPerSecond: number, rssLeakPerSecond = 0): Scrape[] {
  return Array.from({ length: seconds }, (_, i) => ({
    at: 100 + i, rss: 250 * MB + (i % 7) * MB + i * rssLeakPerSecond, targetCache: 0, hotCache: 0, signedManifests: 0, decisionSnapshots: 0, coapDedup: 0, diffsInFlight: 0, diffThreads: 0, fleetBuffer: 0,
    heap: { http: heap(12 * MB + (i % 5) * MB), manifester: heap(10 * MB + (i % 5) * MB + i * leakPerSecond) },
    blockedSeconds: { http: i * 0.01, manifester: i * 0.02 }, busySeconds: { http: i * 0.2, manifester: i * 0.1 },
    serverHeartbeat: { http: new Map(), coap: new Map() },
  }));
}
const limits = { boundBytes: 300 * MB, rssFloorBytesPerMinute: MB, actorHeapBytesPerMinute: 0.5 * MB };
/** Live heaps after full collections at 100 s and 219 s: the manifester's grown by `manifesterGrowth`. */
const live = (manifesterGrowth = 0, rssGrowth = 0) => ({
  start: { at: 100, rss: 240 * MB, threads: { http: { heap_used: 11 * MB, external: 3 * MB }, manifester: { heap_used: 9 * MB, external: 3 * MB } } },
  end: { at: 219, rss: 240 * MB + rssGrowth, threads: { http: { heap_used: 11 * MB, external: 3 * MB }, manifester: { heap_used: 9 * MB + manifesterGrowth, external: 3 * MB } } },
});

t.test('a flat plateau passes; its blocked and busy shares are read per actor', async (t) => {
  const v = judgePlateau(plateau(120, 0), limits, live());
  t.same(v.reasons, []);
  t.ok(v.ok);
  const http = v.actors.find((a) => a.actor === 'http')!;
  t.equal(http.blocked_share, 0.01);
  t.equal(http.busy_share, 0.2);
});

t.test('a leaking actor is named even when RSS hides it', async (t) => {
  const v = judgePlateau(plateau(120, 0), limits, live(2 * MB));
  t.notOk(v.ok);
  t.same(v.grown, ['manifester']);
  t.match(v.reasons.join(), /actor manifester grew: live heap 9.0 → 11.0 MB \(1.01 MB\/min\)/);
});

t.test('garbage is not a leak: a rising heap floor with a flat live heap passes', async (t) => {
  const v = judgePlateau(plateau(120, 0.05 * MB), limits, live());
  t.same(v.reasons, []);
  const manifester = v.actors.find((a) => a.actor === 'manifester')!;
  t.ok(manifester.used_mb_per_min > 1, `the floor of heap used rose ${manifester.used_mb_per_min.toFixed(2)} MB/min, reported`);
  t.equal(manifester.live_mb_per_min, 0);
});

t.test('a plateau whose live memory could not be read does not pass', async (t) => {
  const v = judgePlateau(plateau(120, 0), limits, { start: undefined, end: live().end });
  t.notOk(v.ok);
  t.match(v.reasons.join(), /could not be read/);
});

t.test('a rising RSS floor and a peak over the bound fail', async (t) => {
  const v = judgePlateau(plateau(120, 0, 0.5 * MB), limits, live(0, 4 * MB));
  t.match(v.reasons.join('\n'), /RSS after full collections and a trim rose 2.0 MB\/min over the plateau, 240.0 → 244.0 MB/);
  t.match(v.reasons.join('\n'), /over the documented bound/);
  const garbage = judgePlateau(plateau(120, 0, 0.02 * MB), limits, live());
  t.ok(garbage.rssFloorBytesPerMinute > MB, 'the lowest samples rose, with garbage the collections then freed');
  t.same(garbage.reasons, [], 'which is reported, not judged');
  t.notOk(judgePlateau(plateau(5, 0), limits, live()).ok, 'too few samples cannot pass');
});

t.test('a budget counts as filled when its gauge reached it, within one entry for byte caches', async (t) => {
  const s = toScrape(1, [
    'updater_cache_bytes{cache="target"} 1900000',
    'updater_cache_bytes{cache="hot_transfer"} 1000000',
    'updater_signed_manifest_cache_entries 60',
    'updater_coap_dedup_cache_bytes 65500',
    'updater_diff_threads 2',
    'updater_actor_heap_bytes{actor="coap",kind="used"} 123',
    'updater_actor_heap_bytes{actor="coap",kind="array_buffers"} 456',
  ].join('\n'));
  t.equal(s.heap.coap!.used, 123);
  t.equal(s.heap.coap!.array_buffers, 456, 'array buffers per actor are read');
  const readings = fillReadings([s], { targetCacheBytes: 2 * MB, hotCacheBytes: 2 * MB, manifestEntries: 60, coapDedupBytes: 65536, deltaConcurrency: 2, largestEntryBytes: 260_000 });
  t.same(readings.map((r) => [r.budget, r.filled]), [
    ['store.target_cache_mb', true], ['store.hot_delta_cache_mb', false], ['manifest.cache_size', true], ['store.delta_concurrency', true], ['coap.dedup_cache_bytes', true],
  ]);
  const native = fillReadings([s], { targetCacheBytes: 0, hotCacheBytes: 2 * MB, manifestEntries: 60, coapDedupBytes: 65536, deltaConcurrency: 2, largestEntryBytes: 260_000 });
  t.notOk(native.some((r) => r.budget === 'store.target_cache_mb'), 'no target-cache budget to fill when no generation reads it (the native engine)');
});

t.test("the server's own heartbeat latency is read from its histogram buckets between two scrapes", async (t) => {
  const at = (counts: [number, number, number, number]) => toScrape(1, [
    `updater_http_request_seconds_bucket{route="heartbeat",status="2xx",le="0.001"} ${counts[0]}`,
    `updater_http_request_seconds_bucket{route="heartbeat",status="2xx",le="0.01"} ${counts[1]}`,
    `updater_http_request_seconds_bucket{route="heartbeat",status="2xx",le="0.1"} ${counts[2]}`,
    `updater_http_request_seconds_bucket{route="heartbeat",status="2xx",le="+Inf"} ${counts[3]}`,
    `updater_http_request_seconds_bucket{route="report",status="2xx",le="0.001"} 999`,
  ].join('\n'));
  // Before the window: 500 requests, all fast. In it: 1,000 more, 980 under 1 ms, 15 under 10 ms, 5 under 100 ms.
  const start = at([500, 500, 500, 500]);
  const end = at([1480, 1495, 1500, 1500]);
  t.equal(end.serverHeartbeat.http.get(0.001), 1480, 'the heartbeat route only');
  const s = bucketPercentiles(start.serverHeartbeat.http, end.serverHeartbeat.http);
  t.same(s, { count: 1000, p50_le_ms: 1, p99_le_ms: 10, p999_le_ms: 100 });
  t.same(bucketPercentiles(undefined, new Map()), { count: 0, p50_le_ms: 0, p99_le_ms: 0, p999_le_ms: 0 }, 'no requests: zeros');
});

t.test('the rollout states at the end of a soak are counted from /metrics', async (t) => {
  const text = [
    '# TYPE updater_rollout_state gauge',
    'updater_rollout_state{artifact="app0",state="running"} 0',
    'updater_rollout_state{artifact="app0",state="complete"} 1',
    'updater_rollout_state{artifact="app1",state="running"} 1',
    'updater_rollout_state{artifact="app1",state="complete"} 0',
    'updater_rollout_state{artifact="app2",state="paused"} 1',
    'updater_rollout_state{artifact="app3",state="complete"} 1',
    'updater_rollout_percent{artifact="app3"} 100',
  ].join('\n');
  t.same(countRolloutStates(text), { complete: 2, running: 1, paused: 1 });
  t.same(countRolloutStates('updater_rollout_percent{artifact="a"} 10\n'), {}, 'no rollout: nothing counted');
});

import { rssFloorGrowthPerMinute, type RssSample } from '../../src/load/rss.js';
import type { HeapFigures, LiveReading, Scrape } from './scrape.js';

// The soak's judgements, pure: did every budget fill, and is the plateau flat? A plateau is
// flat when RSS stays under the documented bound, its floor does not rise, and no actor holds
// more alive at the end than at the start; the actor that grew is named, so a leak is found
// rather than averaged. What an actor holds alive is read after a full collection in each
// thread (POST /admin/memory) at the plateau's start and end: the floor of its scraped heap
// `used` still counts garbage, and a quiet thread may not run a full collection for the whole
// window (the manifester's floor rose 0.6 MB/min while its live heap rose 0.1 MB in 4 min).

const MB = 1024 * 1024;

export interface Budgets {
  /** 0 when no generation reads the target cache (the native engine reads files). */
  readonly targetCacheBytes: number;
  readonly hotCacheBytes: number;
  readonly manifestEntries: number;
  /** 0 when the server runs no CoAP listener. */
  readonly coapDedupBytes: number;
  readonly deltaConcurrency: number;
  /** The largest entry a byte cache holds (a full file): an LRU stops short of its budget by up to one. */
  readonly largestEntryBytes: number;
}

export interface FillReading {
  readonly budget: string;
  readonly gauge: string;
  readonly limit: number;
  readonly peak: number;
  readonly filled: boolean;
}

export function fillReadings(samples: readonly Scrape[], b: Budgets): FillReading[] {
  const peak = (read: (s: Scrape) => number) => samples.reduce((m, s) => Math.max(m, read(s)), 0);
  const row = (budget: string, gauge: string, limit: number, read: (s: Scrape) => number, slack: number): FillReading => {
    const p = peak(read);
    return { budget, gauge, limit, peak: p, filled: p >= limit - slack };
  };
  const entry = b.largestEntryBytes;
  const rows = [
    row('store.hot_delta_cache_mb', 'updater_cache_bytes{cache="hot_transfer"}', b.hotCacheBytes, (s) => s.hotCache, entry),
    row('manifest.cache_size', 'updater_signed_manifest_cache_entries', b.manifestEntries, (s) => s.signedManifests, 0),
    row('store.delta_concurrency', 'updater_diff_threads', b.deltaConcurrency, (s) => s.diffThreads, 0),
  ];
  if (b.targetCacheBytes > 0) rows.unshift(row('store.target_cache_mb', 'updater_cache_bytes{cache="target"}', b.targetCacheBytes, (s) => s.targetCache, entry));
  if (b.coapDedupBytes > 0) rows.push(row('coap.dedup_cache_bytes', 'updater_coap_dedup_cache_bytes', b.coapDedupBytes, (s) => s.coapDedup, 1024));
  return rows;
}

export interface PlateauLimits {
  readonly boundBytes: number;
  /** Allowed rise of the RSS floor (RSS after every thread's full collection and the server's malloc trim), bytes per minute. */
  readonly rssFloorBytesPerMinute: number;
  /** Allowed rise of one actor's live heap, or of its external floor, bytes per minute. */
  readonly actorHeapBytesPerMinute: number;
}

export interface ActorGrowth {
  readonly actor: string;
  readonly start: HeapFigures;
  readonly end: HeapFigures;
  /** Heap used after a full collection at the plateau's start and end (bytes), and its growth in MB per minute. */
  readonly live_start: number;
  readonly live_end: number;
  readonly live_mb_per_min: number;
  /** Floor growth of the scraped figures over the plateau, MB per minute (`used` counts garbage too: reported, not judged). */
  readonly used_mb_per_min: number;
  readonly external_mb_per_min: number;
  /** Share of the plateau's wall time the actor's event loop was blocked. */
  readonly blocked_share: number;
  /** Share of the plateau's wall time the actor's event loop ran code. */
  readonly busy_share: number;
}

export interface PlateauVerdict {
  readonly ok: boolean;
  readonly seconds: number;
  readonly peakBytes: number;
  readonly firstFloorBytes: number;
  readonly lastFloorBytes: number;
  readonly rssFloorBytesPerMinute: number;
  /** RSS after every thread's full collection and a malloc trim at the plateau's start and end, and its growth per minute: what is judged. */
  readonly collectedRssStart: number;
  readonly collectedRssEnd: number;
  readonly collectedRssBytesPerMinute: number;
  readonly actors: readonly ActorGrowth[];
  /** Actors whose heap floor rose past the limit, largest growth first. */
  readonly grown: readonly string[];
  readonly reasons: readonly string[];
}

/** The threads' live memory at the plateau's start and end; undefined where the server did not answer. */
export interface LiveReadings {
  readonly start: LiveReading | undefined;
  readonly end: LiveReading | undefined;
}

export function judgePlateau(samples: readonly Scrape[], limits: PlateauLimits, live: LiveReadings): PlateauVerdict {
  const reasons: string[] = [];
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (!first || !last || samples.length < 10) {
    return { ok: false, seconds: 0, peakBytes: 0, firstFloorBytes: 0, lastFloorBytes: 0, rssFloorBytesPerMinute: 0, collectedRssStart: 0, collectedRssEnd: 0, collectedRssBytesPerMinute: 0, actors: [], grown: [], reasons: ['fewer than 10 samples of /metrics in the plateau'] };
  }
  const series = (read: (s: Scrape) => number | undefined): RssSample[] =>
    samples.flatMap((s) => {
      const bytes = read(s);
      return bytes === undefined ? [] : [{ atSeconds: s.at, bytes }];
    });
  const rss = series((s) => s.rss);
  const third = Math.floor(rss.length / 3);
  const floor = (span: RssSample[]) => Math.min(...span.map((s) => s.bytes));
  const peakBytes = Math.max(...rss.map((s) => s.bytes));
  const rssGrowth = rssFloorGrowthPerMinute(rss);
  const seconds = last.at - first.at;
  const liveMinutes = live.start && live.end ? (live.end.at - live.start.at) / 60 : 0;
  if (liveMinutes <= 0) reasons.push('the threads\' live memory could not be read at the plateau\'s start and end (POST /admin/memory)');
  const actors = Object.keys(last.heap).filter((a) => first.heap[a]).map((actor): ActorGrowth => {
    const share = (counter: Record<string, number>, firstCounter: Record<string, number>) => {
      const d = (counter[actor] ?? 0) - (firstCounter[actor] ?? 0);
      return seconds > 0 && d >= 0 ? Number((d / seconds).toFixed(4)) : 0;
    };
    const liveStart = live.start?.threads[actor]?.heap_used ?? 0;
    const liveEnd = live.end?.threads[actor]?.heap_used ?? 0;
    return {
      actor,
      start: first.heap[actor]!,
      end: last.heap[actor]!,
      live_start: liveStart,
      live_end: liveEnd,
      live_mb_per_min: liveMinutes > 0 && liveStart > 0 && liveEnd > 0 ? (liveEnd - liveStart) / MB / liveMinutes : 0,
      used_mb_per_min: rssFloorGrowthPerMinute(series((s) => s.heap[actor]?.used)) / MB,
      external_mb_per_min: rssFloorGrowthPerMinute(series((s) => s.heap[actor]?.external)) / MB,
      blocked_share: share(last.blockedSeconds, first.blockedSeconds),
      busy_share: share(last.busySeconds, first.busySeconds),
    };
  });
  const limitMb = limits.actorHeapBytesPerMinute / MB;
  const grown = actors
    .filter((a) => a.live_mb_per_min > limitMb || a.external_mb_per_min > limitMb)
    .sort((x, y) => Math.max(y.live_mb_per_min, y.external_mb_per_min) - Math.max(x.live_mb_per_min, x.external_mb_per_min))
    .map((a) => a.actor);
  if (peakBytes > limits.boundBytes) reasons.push(`peak RSS ${mbText(peakBytes)} MB is over the documented bound of ${mbText(limits.boundBytes)} MB`);
  // The floor is judged as RSS right after every thread collected its garbage and the server
  // handed glibc's free pages back (POST /admin/memory): the lowest of the 1 Hz samples still
  // holds whatever garbage seven heaps had not collected at that moment (up to 4 MiB of old
  // generation and 8 MiB of young each) and whatever glibc kept since the last trim, and in
  // full soaks with every live heap flat it rose 0.6 to 4.1 MB/min. It is still reported
  // (firstFloorBytes…).
  const collectedRssStart = live.start?.rss ?? 0;
  const collectedRssEnd = live.end?.rss ?? 0;
  const collectedRssBytesPerMinute = liveMinutes > 0 && collectedRssStart > 0 && collectedRssEnd > 0 ? (collectedRssEnd - collectedRssStart) / liveMinutes : 0;
  if (liveMinutes > 0 && (collectedRssStart === 0 || collectedRssEnd === 0)) reasons.push('the RSS after the full collections could not be read');
  if (collectedRssBytesPerMinute > limits.rssFloorBytesPerMinute) {
    reasons.push(`the RSS after full collections and a trim rose ${mbText(collectedRssBytesPerMinute)} MB/min over the plateau, ${mbText(collectedRssStart)} → ${mbText(collectedRssEnd)} MB (limit ${mbText(limits.rssFloorBytesPerMinute)})`);
  }
  for (const actor of grown) {
    const a = actors.find((x) => x.actor === actor)!;
    reasons.push(`actor ${actor} grew: live heap ${mbText(a.live_start)} → ${mbText(a.live_end)} MB (${a.live_mb_per_min.toFixed(2)} MB/min), external floor ${a.external_mb_per_min.toFixed(2)} MB/min (limit ${limitMb.toFixed(2)})`);
  }
  return {
    ok: reasons.length === 0,
    seconds,
    peakBytes,
    firstFloorBytes: floor(rss.slice(0, Math.max(1, third))),
    lastFloorBytes: floor(rss.slice(rss.length - Math.max(1, third))),
    rssFloorBytesPerMinute: rssGrowth,
    collectedRssStart,
    collectedRssEnd,
    collectedRssBytesPerMinute,
    actors,
    grown,
    reasons,
  };
}

export function mbText(bytes: number): string {
  return (bytes / MB).toFixed(1);
}

import { createRequire } from 'node:module';
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../shared/logger.js';

// Hands the C library's free memory back to the system.
//
// glibc's malloc keeps the pages of the blocks it frees: an arena gives memory back only from
// its top, and only past a threshold. Native buffers of a few MiB (bsdiff-node's working
// memory in the diff threads, zstd's, SQLite's) come from the arenas once glibc's dynamic mmap
// threshold has risen past them, and once freed their pages stay resident, scattered through
// the arenas. In full soaks every thread's live heap was flat while anonymous memory rose
// 13-26 MB per ten minutes; one `malloc_trim(0)` in the middle of one released 38 MB, and
// another three minutes later 49 MB, leaving the process 29 MB below the first one's figure
// (docs/memory.md, "Free memory handed back"). `malloc_trim(0)` walks every arena and gives
// back each free page (madvise), not only the top.
//
// So the supervisor calls it when the process's RSS has grown by TRIM_GROWTH_BYTES since the
// figure after the last call, at most every TRIM_INTERVAL_MS: once soon after start (the
// actors start after the first figure), then only as RSS grows; under the soak's load about
// every ten seconds. A call takes a few milliseconds and holds each arena's lock while it walks
// it; memory it gave back costs a page fault when used again.
//
// glibc only, bound through koffi (an optional dependency): elsewhere (musl, macOS, a platform
// koffi has no build for) there is no malloc_trim, and no trimming.

/** RSS growth since the figure after the last trim that calls for another. */
export const TRIM_GROWTH_BYTES = 8 * 1024 * 1024;
/** The least time between two trims. */
export const TRIM_INTERVAL_MS = 10_000;
const CHECK_INTERVAL_MS = 1_000;
const MIB = 1024 * 1024;

export interface TrimResult {
  /** RSS before and after, in bytes (other threads allocate meanwhile: approximate). */
  readonly rssBefore: number;
  readonly rssAfter: number;
  readonly seconds: number;
}

type MallocTrim = (pad: number) => number;
type Binding = { readonly trim: MallocTrim } | { readonly missing: string };
let binding: Binding | undefined;

/** glibc's `malloc_trim`, or why this process has none. Loaded on first use: koffi's own import throws where it has no build. */
export function mallocTrim(): Binding {
  if (!binding) {
    try {
      const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
      binding = { trim: koffi.load('libc.so.6').func('int malloc_trim(size_t pad)') as MallocTrim };
    } catch (err) {
      binding = { missing: (err as Error).message };
    }
  }
  return binding;
}

export class MallocTrimmer {
  private readonly trims: Counter;
  private readonly released: Counter;
  private readonly seconds: Counter;
  private readonly timer?: NodeJS.Timeout;
  private baseline = process.memoryUsage.rss();
  private lastAt = 0;

  constructor(registry: Registry, log: Logger, growthBytes = TRIM_GROWTH_BYTES, intervalMs = TRIM_INTERVAL_MS) {
    this.trims = new Counter({ name: 'updater_malloc_trims_total', help: `Times the C library's free memory was handed back to the system (glibc malloc_trim), after RSS grew by ${growthBytes / MIB} MiB or on POST /admin/memory`, registers: [registry] });
    this.released = new Counter({ name: 'updater_malloc_trim_released_bytes_total', help: 'RSS given back by those trims (RSS before minus after; approximate, other threads allocate meanwhile)', registers: [registry] });
    this.seconds = new Counter({ name: 'updater_malloc_trim_seconds_total', help: 'Time spent in those trims', registers: [registry] });
    const found = mallocTrim();
    if ('missing' in found) {
      log.info({ reason: found.missing }, 'no glibc malloc_trim here: the C library\'s free memory is left to it');
      return;
    }
    this.timer = setInterval(() => {
      const rss = process.memoryUsage.rss();
      this.baseline = Math.min(this.baseline, rss);
      if (rss - this.baseline >= growthBytes && performance.now() - this.lastAt >= intervalMs) this.trim();
    }, CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  /** Trims now; undefined where there is no malloc_trim. */
  trim(): TrimResult | undefined {
    const found = mallocTrim();
    if (!('trim' in found)) return undefined;
    const rssBefore = process.memoryUsage.rss();
    const started = performance.now();
    found.trim(0);
    this.lastAt = performance.now();
    const rssAfter = process.memoryUsage.rss();
    const seconds = (this.lastAt - started) / 1000;
    this.baseline = rssAfter;
    this.trims.inc();
    this.released.inc(Math.max(0, rssBefore - rssAfter));
    this.seconds.inc(seconds);
    return { rssBefore, rssAfter, seconds };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

import { parseDerivedName } from '../../shared/store-layout.js';

// The retention rules (docs/retention.md), as a pure function of what the store holds and what the
// tracks reference. The sweeper actor feeds it and carries out its verdict through the
// store-keeper, the only writer of the store.

export interface StoredFile {
  readonly name: string;
  readonly size: number;
  readonly mtimeMs: number;
}

export interface StoredBinary {
  readonly hash: string;
  readonly size: number;
  readonly mtimeMs: number;
}

export interface References {
  /** Current target of every track. */
  readonly current: ReadonlySet<string>;
  /** Every hash in any track's history (superseded targets kept as delta sources). */
  readonly history: ReadonlySet<string>;
}

export interface RetentionRules {
  readonly deltaMaxAgeMs: number;
  /** 0 disables the size cap. */
  readonly deltasMaxTotalBytes: number;
  readonly collectOrphanBinaries: boolean;
  readonly orphanBinaryMinAgeMs: number;
}

export type DerivedVerdict = 'unparseable' | 'destination-not-current' | 'source-not-in-history' | 'too-old' | 'over-size-cap';

export interface SweepPlan {
  /** Derived files to delete, each with the rule that removed it. */
  readonly derived: readonly { file: StoredFile; reason: Exclude<DerivedVerdict, 'unparseable'> }[];
  /** Names left alone because they are not derived-file names (logged at DEBUG). */
  readonly unparseable: readonly string[];
  readonly binaries: readonly StoredBinary[];
}

export function planSweep(files: readonly StoredFile[], binaries: readonly StoredBinary[], refs: References, rules: RetentionRules, now: number): SweepPlan {
  const derived: { file: StoredFile; reason: Exclude<DerivedVerdict, 'unparseable'> }[] = [];
  const unparseable: string[] = [];
  const survivors: StoredFile[] = [];
  for (const file of files) {
    const parsed = parseDerivedName(file.name);
    if (!parsed) unparseable.push(file.name); // rule 1
    else if (!refs.current.has(parsed.to)) derived.push({ file, reason: 'destination-not-current' }); // rule 2
    else if (parsed.kind === 'delta' && !refs.history.has(parsed.from)) derived.push({ file, reason: 'source-not-in-history' }); // rule 3
    else if (now - file.mtimeMs > rules.deltaMaxAgeMs) derived.push({ file, reason: 'too-old' }); // rule 4
    else survivors.push(file);
  }
  // Rule 5: evict the oldest survivors until the directory fits the cap.
  if (rules.deltasMaxTotalBytes > 0) {
    let total = survivors.reduce((sum, f) => sum + f.size, 0);
    for (const file of [...survivors].sort((a, b) => a.mtimeMs - b.mtimeMs)) {
      if (total <= rules.deltasMaxTotalBytes) break;
      derived.push({ file, reason: 'over-size-cap' });
      total -= file.size;
    }
  }
  const orphans = rules.collectOrphanBinaries
    ? binaries.filter((b) => !refs.current.has(b.hash) && !refs.history.has(b.hash) && now - b.mtimeMs >= rules.orphanBinaryMinAgeMs)
    : [];
  return { derived, unparseable, binaries: orphans };
}

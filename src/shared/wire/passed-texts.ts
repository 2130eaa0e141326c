/** The most texts a PassedTexts remembers before it forgets them all. */
export const PASSED_TEXTS = 256;

/**
 * Texts that passed a rule, remembered per thread so that the next message carrying the same one
 * is not checked again. A fleet sends a few distinct tracks and version hashes, thousands of
 * times a second. Their checks (a split, two patterns and an object for a track key, a pattern
 * for a hash) cost more than a lookup: validating a parsed heartbeat took about 1.0 µs before
 * and 0.4 µs after (bench/results/2026-11-30-validation-memo.md).
 *
 * Only texts that passed are kept, so an invalid one is checked, and refused, every time. At
 * most PASSED_TEXTS are held, all forgotten at once when full: a fleet with more distinct texts
 * is only checked more often. The heartbeat's two (track keys of up to 200 characters, hashes of
 * 64) hold at most about 90 KiB a thread (docs/memory.md, baseline).
 */
export class PassedTexts {
  private readonly texts = new Set<unknown>();

  get size(): number {
    return this.texts.size;
  }

  has(value: unknown): value is string {
    return this.texts.has(value);
  }

  add(text: string): void {
    if (this.texts.size >= PASSED_TEXTS) this.texts.clear();
    this.texts.add(text);
  }
}

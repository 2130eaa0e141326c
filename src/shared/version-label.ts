// A track's version label is told to devices and is one of the parts of the signed release
// statement (src/shared/release/statement.ts), whose parts are joined by "\n". A label with a
// line break or another control character would let the signed text be read more than one
// way (and would forge lines in logs and the console), so every place a label enters — the
// admin API, the configuration file, `updater push`, the state file — refuses it with the same
// rule (docs/configuration.md, "Version labels").

/**
 * The one limit of a version label, end to end: what a track may carry, what a heartbeat may
 * report (src/shared/wire/validate.ts) and what the agent accepts in a manifest and keeps
 * (agent/manifest.ts, agent/state.ts), so a label the server hands out always comes back whole.
 */
export const MAX_VERSION_LABEL_LENGTH = 128;

/** Unicode control characters (C0, DEL, C1) and the line and paragraph separators. */
export const NOT_PRINTABLE = /[\p{Cc}\u2028\u2029]/u;

/** Why the value is not a usable version label, or undefined when it is one. */
export function versionLabelProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return 'must be a non-empty string';
  if (value.length > MAX_VERSION_LABEL_LENGTH) return `must be at most ${MAX_VERSION_LABEL_LENGTH} characters`;
  const bad = NOT_PRINTABLE.exec(value);
  if (bad) return `must not contain a line break or another control character (found U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} at index ${bad.index})`;
  return undefined;
}

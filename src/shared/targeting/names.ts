import { UpdaterError, type ErrorCode } from '../errors.js';

// Tags, group names and attribute keys share one rule (docs/rollouts.md, "Targeting"): 1 to 64
// characters of [A-Za-z0-9_.-]. They reach SQL parameters, URLs, log fields and the console, so
// every boundary checks them with this one test and names the field it refused.

export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
export const MAX_NAME_LENGTH = 64;
/** Tags one device may carry, and tags one filter or bulk change may name. */
export const MAX_TAGS = 16;

export function isTargetName(value: unknown): value is string {
  return typeof value === 'string' && NAME_PATTERN.test(value);
}

/** Throws `code` (INVALID_FIELD unless the caller is a rollout) naming `field`. */
export function refuse(field: string, problem: string, code: ErrorCode = 'INVALID_FIELD'): never {
  throw new UpdaterError(code, `${field} ${problem}`, { field });
}

export function parseTargetName(value: unknown, field: string, code: ErrorCode = 'INVALID_FIELD'): string {
  if (!isTargetName(value)) refuse(field, 'must be 1 to 64 characters of A-Z, a-z, 0-9, "_", "." and "-"', code);
  return value;
}

/** A list of tags: at most MAX_TAGS names, returned sorted and without repeats. */
export function parseTagList(value: unknown, field: string, max = MAX_TAGS): string[] {
  if (!Array.isArray(value)) refuse(field, 'must be a list of tags');
  if (value.length > max) refuse(field, `must hold at most ${max} tags`);
  const tags = value.map((tag, i) => parseTargetName(tag, `${field}[${i}]`));
  return [...new Set(tags)].sort();
}

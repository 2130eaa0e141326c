import { UpdaterError } from './errors.js';

// Small checks every boundary that reads outside input shares: device messages, admin
// bodies, the state file and the configuration.

/** A plain object (a JSON or YAML map), not null and not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A field of a request body is wrong: INVALID_FIELD naming it. */
export function invalidField(field: string, problem: string): never {
  throw new UpdaterError('INVALID_FIELD', `${field} ${problem}`, { field });
}

/** Refuses a body field the API does not know (usually a typo) with INVALID_FIELD. */
export function refuseUnknownFields(body: Record<string, unknown>, known: readonly string[]): void {
  for (const key of Object.keys(body)) {
    if (!known.includes(key)) invalidField(key, `is not a known field (known: ${known.join(', ')})`);
  }
}

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

/** `store.delta_concurrency`, `artifacts[0].binary`. */
export function keyPath(path: readonly PropertyKey[]): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join('') || '(top level)';
}

/** The first problem a zod decoder found, as `key.path message` (the message alone at the top). */
export function firstProblem(issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[]): string {
  const issue = issues[0]!;
  return issue.path.length === 0 ? issue.message : `${keyPath(issue.path)} ${issue.message}`;
}

import { DEVICE_AUTH_STATES, type DeviceAuthState, type DeviceQuery, type ReportQuery } from '../../../messages/fleet.js';
import { parseDuration } from '../../../shared/duration.js';
import { UpdaterError } from '../../../shared/errors.js';
import { assertSha256Hex } from '../../../shared/hash.js';
import { parseTargetName } from '../../../shared/targeting/names.js';
import { NOT_PRINTABLE } from '../../../shared/version-label.js';
import { deviceIdField } from '../../../shared/wire/validate.js';
import { artifactKey } from './body.js';

// The query strings of the fleet admin calls (docs/fleet.md, "Reading it"), checked before any database
// work: an unknown key, a limit out of range or a cursor this server did not write is a 400
// with a stable code.

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;
const MAX_DEVICE_ID = 128;
const CURSOR_PREFIX = 'd:';
/**
 * The longest cursor this server writes: the prefix and a device id of MAX_DEVICE_ID UTF-16
 * units, each at most 3 bytes of UTF-8 (a pair is 4 bytes for 2 units), in unpadded base64url.
 */
const MAX_CURSOR = Math.ceil(((CURSOR_PREFIX.length + 3 * MAX_DEVICE_ID) * 4) / 3);
const CURSOR_TEXT = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_CURSOR}}$`);

/** The query string as a map; an unknown or repeated key is refused. */
export function parseQuery(raw: string, known: readonly string[]): Map<string, string> {
  const params = new URLSearchParams(raw);
  const seen = new Map<string, string>();
  for (const [key, value] of params) {
    if (!known.includes(key)) throw new UpdaterError('UNKNOWN_QUERY_PARAMETER', `unknown query parameter ${JSON.stringify(key)}; this call takes ${known.join(', ')}`, { field: key });
    if (seen.has(key)) throw new UpdaterError('INVALID_FIELD', `${key} is given twice`, { field: key });
    seen.set(key, value);
  }
  return seen;
}

/** The opaque cursor of a page: the last device id it held. */
export function encodeCursor(deviceId: string): string {
  return Buffer.from(CURSOR_PREFIX + deviceId, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  const bad = () => new UpdaterError('INVALID_CURSOR', 'after must be the "next" value of a previous page');
  if (!CURSOR_TEXT.test(cursor)) throw bad();
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const deviceId = text.slice(CURSOR_PREFIX.length);
  // Canonical only: the same bytes this server would have written, so nothing else decodes.
  // No device id holds a control character (deviceIdField): PostgreSQL's text could not even hold U+0000.
  if (!text.startsWith(CURSOR_PREFIX) || deviceId.length === 0 || deviceId.length > MAX_DEVICE_ID || NOT_PRINTABLE.test(deviceId) || encodeCursor(deviceId) !== cursor) throw bad();
  return deviceId;
}

export function parseLimit(text: string | undefined): number {
  if (text === undefined) return DEFAULT_LIMIT;
  if (!/^\d{1,7}$/.test(text) || Number(text) < 1 || Number(text) > MAX_LIMIT) {
    throw new UpdaterError('INVALID_LIMIT', `limit must be an integer from 1 to ${MAX_LIMIT} (got ${JSON.stringify(text.slice(0, 20))})`);
  }
  return Number(text);
}

/** A duration parameter (`24h`) as the Unix second that far before now. */
function secondsAgo(q: Map<string, string>, key: string, nowMs: number): number | undefined {
  const text = q.get(key);
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) throw new UpdaterError('INVALID_FIELD', `${key} must be a duration like 15m, 24h or 7d`, { field: key });
  // Digits are unbounded: a duration longer than the epoch's age means since the first device ever seen (PostgreSQL's bigint holds no 1e22 seconds, nor -Infinity).
  return Math.max(0, Math.floor((nowMs - ms) / 1000));
}

/** `GET /admin/devices?artifact=&version_hash=&seen_within=&not_seen_for=&limit=&after=&group=` */
export function parseDeviceQuery(raw: string, nowMs: number): DeviceQuery {
  const q = parseQuery(raw, ['artifact', 'version_hash', 'seen_within', 'not_seen_for', 'limit', 'after', 'auth_state', 'group']);
  const group = q.get('group');
  if (group !== undefined) parseTargetName(group, 'group');
  if (group !== undefined && q.has('auth_state')) throw new UpdaterError('INVALID_FIELD', 'group cannot be combined with auth_state', { field: 'group' });
  const authState = q.get('auth_state');
  if (authState !== undefined && !(DEVICE_AUTH_STATES as readonly string[]).includes(authState)) {
    throw new UpdaterError('INVALID_FIELD', `auth_state must be one of ${DEVICE_AUTH_STATES.join(', ')}`, { field: 'auth_state' });
  }
  const artifact = q.get('artifact');
  const versionHash = q.get('version_hash');
  const seenSince = secondsAgo(q, 'seen_within', nowMs);
  const seenBefore = secondsAgo(q, 'not_seen_for', nowMs);
  const after = q.get('after');
  return {
    limit: parseLimit(q.get('limit')),
    ...(artifact !== undefined ? { artifact: artifactKey(artifact) } : {}),
    ...(versionHash !== undefined ? { versionHash: assertSha256Hex(versionHash, 'version_hash') } : {}),
    ...(seenSince !== undefined ? { seenSince } : {}),
    ...(seenBefore !== undefined ? { seenBefore } : {}),
    ...(after !== undefined ? { after: decodeCursor(after) } : {}),
    ...(authState !== undefined ? { authState: authState as DeviceAuthState } : {}),
    ...(group !== undefined ? { group } : {}),
  };
}

/** `GET /admin/reports?success=&artifact=&limit=` */
export function parseReportQuery(raw: string): ReportQuery {
  const q = parseQuery(raw, ['success', 'artifact', 'limit']);
  const success = q.get('success');
  if (success !== undefined && success !== 'true' && success !== 'false') throw new UpdaterError('INVALID_FIELD', 'success must be true or false', { field: 'success' });
  const artifact = q.get('artifact');
  return {
    limit: parseLimit(q.get('limit')),
    ...(success !== undefined ? { success: success === 'true' } : {}),
    ...(artifact !== undefined ? { artifact: artifactKey(artifact) } : {}),
  };
}

/** `GET /admin/fleet?artifact=`: the track key, or undefined for the default track. */
export function parseSummaryQuery(raw: string): string | undefined {
  const artifact = parseQuery(raw, ['artifact']).get('artifact');
  return artifact === undefined ? undefined : artifactKey(artifact);
}

/** The `{device_id}` path segment, percent-decoded and checked like a heartbeat's device_id. */
export function parseDeviceId(segment: string): string {
  let id: string;
  try {
    id = decodeURIComponent(segment);
  } catch {
    throw new UpdaterError('INVALID_FIELD', 'the device id in the path is not valid percent-encoding', { field: 'device_id' });
  }
  // The heartbeat's own rule: an id no device can have (a control character, which PostgreSQL's
  // text cannot even hold as U+0000) is a 400 here, not a database error.
  return deviceIdField(id, 'device_id');
}

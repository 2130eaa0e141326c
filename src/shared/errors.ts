// One registry of every error the service can answer with: a stable code, the HTTP status
// and the CoAP response code. Front-ends map code → status here and nowhere else.

export interface ErrorSpec {
  readonly http: number;
  readonly coap: string;
  readonly message: string;
  /**
   * The server's own failure, not the client's: logged at error level with its detail. Any
   * error outside this table (a Node system error such as ENOENT, EIO or EMFILE, a bug)
   * counts as INTERNAL, so it is logged too.
   */
  readonly internal?: true;
}

export const ERRORS = {
  MALFORMED_BODY: { http: 400, coap: '4.00', message: 'the request body is not valid JSON or CBOR' },
  BAD_FRAMING: { http: 400, coap: '4.00', message: 'the request\'s framing is ambiguous; the connection is closed' },
  INVALID_FIELD: { http: 400, coap: '4.00', message: 'a field of the request has the wrong type or value' },
  INVALID_HASH: { http: 400, coap: '4.00', message: 'a hash is not 64 lowercase hex characters' },
  INVALID_ARTIFACT_KEY: { http: 400, coap: '4.00', message: 'the track key is not name or name/os/arch with the allowed characters' },
  INVALID_RANGE: { http: 416, coap: '4.02', message: 'the requested range cannot be satisfied' },
  UNAUTHORIZED: { http: 401, coap: '4.01', message: 'a valid Bearer token is required' },
  RATE_LIMITED: { http: 429, coap: '4.29', message: 'too many failed authentications; retry in a second' },
  NOT_FOUND: { http: 404, coap: '4.04', message: 'no such resource' },
  ARTIFACT_NOT_FOUND: { http: 404, coap: '4.04', message: 'the artifact track is unknown' },
  DELTA_NOT_FOUND: { http: 404, coap: '4.04', message: 'no finished delta exists for that pair' },
  BINARY_NOT_FOUND: { http: 404, coap: '4.04', message: 'no compressed binary exists for that hash' },
  UNSUPPORTED_CRITICAL_OPTION: { http: 400, coap: '4.02', message: 'the request carries a critical CoAP option this server does not implement' },
  PROXYING_NOT_SUPPORTED: { http: 502, coap: '5.05', message: 'this server is not a proxy' },
  METHOD_NOT_ALLOWED: { http: 405, coap: '4.05', message: 'method not allowed on this path' },
  BODY_TOO_LARGE: { http: 413, coap: '4.13', message: 'the request body is larger than allowed' },
  UNSUPPORTED_MEDIA_TYPE: { http: 415, coap: '4.15', message: 'the request body must be application/json' },
  DELTA_TOO_LARGE: { http: 409, coap: '4.09', message: 'a binary of the pair exceeds store.delta_max_source_mb' },
  INVALID_ROLLOUT: { http: 400, coap: '4.00', message: 'the rollout object of a publish is not valid' },
  ROLLOUT_NOT_FOUND: { http: 404, coap: '4.04', message: 'the track has no rollout' },
  ROLLOUT_CONFLICT: { http: 409, coap: '4.09', message: 'the rollout is in a state that does not allow this action' },
  TRACK_CONFIGURED: { http: 409, coap: '4.09', message: 'the track is declared in the configuration file, which would put it back at the next start: change it there' },
  PUBLISH_PATH_FORBIDDEN: { http: 403, coap: '4.03', message: 'the binary path is outside store.publish_roots or is one of the server\'s own files' },
  SOURCE_UNREADABLE: { http: 422, coap: '4.22', message: 'the binary file cannot be read' },
  STORE_CORRUPT: { http: 500, coap: '5.00', message: 'a stored file does not match its content hash', internal: true },
  STORE_FULL: { http: 507, coap: '5.03', message: 'the store has no space left; the change was not applied' },
  STORE_READ_ONLY: { http: 503, coap: '5.03', message: 'the store is read-only; the change was not applied' },
  DIFF_FAILED: { http: 500, coap: '5.00', message: 'delta generation failed', internal: true },
  ACTOR_TIMEOUT: { http: 503, coap: '5.03', message: 'an internal component did not answer in time' },
  ACTOR_UNAVAILABLE: { http: 503, coap: '5.03', message: 'an internal component is restarting' },
  SHUTTING_DOWN: { http: 503, coap: '5.03', message: 'the server is shutting down' },
  OVERLOADED: { http: 503, coap: '5.03', message: 'too many requests in flight; retry later' },
  REPORT_RATE_LIMITED: { http: 429, coap: '4.29', message: 'the device sent more update reports than fleet.report_burst and fleet.reports_per_minute allow; this one was not stored: send it again after Retry-After (Max-Age) seconds' },
  // Fleet inventory (docs/fleet.md).
  UNKNOWN_QUERY_PARAMETER: { http: 400, coap: '4.00', message: 'the query string names a parameter this call does not take' },
  INVALID_LIMIT: { http: 400, coap: '4.00', message: 'limit must be an integer from 1 to 1000' },
  INVALID_CURSOR: { http: 400, coap: '4.00', message: 'the cursor is not one this server handed out' },
  DEVICE_NOT_FOUND: { http: 404, coap: '4.04', message: 'no device with that id is in the inventory' },
  FLEET_DISABLED: { http: 404, coap: '4.04', message: 'the fleet inventory is turned off (fleet.enabled: false)' },
  DATABASE_UNREACHABLE: { http: 503, coap: '5.03', message: 'the database cannot be reached (the fleet inventory; in a cluster, every admin write)' },
  // Targeting (docs/rollouts.md, "Targeting").
  GROUP_NOT_FOUND: { http: 404, coap: '4.04', message: 'no group with that name' },
  GROUP_IN_USE: { http: 409, coap: '4.09', message: 'a rollout that is not complete or aborted names the group' },
  TOO_MANY_GROUPS: { http: 409, coap: '4.09', message: 'the number of groups is at its cap' },
  // Operator tokens and roles (docs/operations.md).
  FORBIDDEN: { http: 403, coap: '4.03', message: 'the token is valid but its role does not allow this call' },
  TOKEN_NOT_FOUND: { http: 404, coap: '4.04', message: 'no operator token with that id' },
  TOO_MANY_TOKENS: { http: 409, coap: '4.09', message: 'the number of stored operator tokens is at its cap' },
  CONFIG_INVALID: { http: 500, coap: '5.00', message: 'the configuration is invalid', internal: true },
  STATE_CORRUPT: { http: 500, coap: '5.00', message: 'the state file is corrupt', internal: true },
  STATE_WRITE_FAILED: { http: 500, coap: '5.00', message: 'the state file could not be written; the change was not applied', internal: true },
  INTERNAL: { http: 500, coap: '5.00', message: 'internal error', internal: true },
  // Device-agent failures: they end an update cycle and are logged; never sent on the wire.
  AGENT_MANIFEST_INVALID: { http: 502, coap: '5.02', message: 'the server answered with a malformed manifest' },
  AGENT_SIGNATURE_INVALID: { http: 502, coap: '5.02', message: 'the manifest signature does not verify with the configured public key' },
  AGENT_REQUEST_REFUSED: { http: 502, coap: '5.02', message: 'the server refused a device request' },
  AGENT_TRANSPORT_FAILED: { http: 502, coap: '5.02', message: 'the server could not be reached or broke the connection' },
  AGENT_TRANSFER_TOO_LARGE: { http: 502, coap: '5.02', message: 'the transfer grew past the size the manifest announced' },
  AGENT_TRANSFER_TOO_SLOW: { http: 504, coap: '5.04', message: 'the transfer fell below the throughput floor or passed its deadline' },
  AGENT_TRANSFER_HASH_MISMATCH: { http: 502, coap: '5.02', message: 'the received bytes do not hash to delta_hash' },
  AGENT_RECONSTRUCTION_MISMATCH: { http: 500, coap: '5.00', message: 'the rebuilt slot does not hash to target_hash' },
  AGENT_SLOT_DIR_INVALID: { http: 500, coap: '5.00', message: 'the slot directory is not provisioned as documented' },
  AGENT_DISK_FULL: { http: 507, coap: '5.00', message: 'no space left on the device' },
  AGENT_RESTART_FAILED: { http: 500, coap: '5.00', message: 'restart_command failed' },
  RELEASE_REFUSED: { http: 502, coap: '5.02', message: 'the release statement of an answer does not verify, has expired, or is older than the running release' },
  // Uploads into the store (docs/operations.md, "Uploads").
  HASH_MISMATCH: { http: 400, coap: '4.00', message: 'the uploaded bytes do not hash to X-Content-SHA256; nothing was stored' },
  // Device identity (devices.auth, docs/protocol.md "Device authentication").
  DEVICE_AUTH_FAILED: { http: 401, coap: '4.01', message: 'the auth request\'s signature does not verify, its timestamp is outside the clock window, or it is not newer than the device\'s last one' },
  DEVICE_NOT_ACCEPTED: { http: 403, coap: '4.03', message: 'the device is rejected, or unknown while enrollment is preauthorized' },
  DEVICE_KEY_MISMATCH: { http: 403, coap: '4.03', message: 'the device id is bound to another key' },
  DEVICE_TOKEN_INVALID: { http: 401, coap: '4.01', message: 'a valid device token is required (missing, unknown, expired or revoked)' },
  DEVICE_MISMATCH: { http: 403, coap: '4.03', message: 'the request names another device than its token' },
  DEVICE_PENDING_FULL: { http: 429, coap: '4.29', message: 'devices.max_pending enrollments are already waiting; retry later' },
  AGENT_ENROLLMENT_PENDING: { http: 403, coap: '4.03', message: 'the device key waits for an operator to accept it' },
  AGENT_IDENTITY_INVALID: { http: 500, coap: '5.00', message: 'identity_key_file cannot be read or is not an Ed25519 PKCS#8 PEM key' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

export class UpdaterError extends Error {
  override readonly name = 'UpdaterError';
  constructor(
    readonly code: ErrorCode,
    message: string = ERRORS[code].message,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export function isUpdaterError(err: unknown): err is UpdaterError {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string'
    && (err as { code: string }).code in ERRORS;
}

/** The wire shape of an error crossing a thread boundary: plain data, no prototype. */
export interface SerializedError {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  stack?: string;
}

export function serializeError(err: unknown): SerializedError {
  if (isUpdaterError(err)) {
    return { code: err.code, message: err.message, details: err.details, stack: err.stack };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  return { code: 'INTERNAL', message: e.message, stack: e.stack };
}

export function deserializeError(data: SerializedError): UpdaterError {
  const err = new UpdaterError(data.code in ERRORS ? data.code : 'INTERNAL', data.message, data.details);
  if (data.stack) err.stack = data.stack;
  return err;
}

/** Whether a failure must be logged: the registry decides; anything outside it is internal. */
export function errorIsInternal(err: unknown): boolean {
  if (!isUpdaterError(err)) return true;
  const spec: ErrorSpec = ERRORS[err.code];
  return spec.internal === true;
}

export function errorStatus(err: unknown): { code: ErrorCode; http: number; coap: string; message: string } {
  const e = isUpdaterError(err) ? err : new UpdaterError('INTERNAL');
  const spec = ERRORS[e.code];
  // Internal failures keep their detail in the log, not on the wire.
  const message = spec.http >= 500 && e.code === 'INTERNAL' ? spec.message : e.message;
  return { code: e.code, http: spec.http, coap: spec.coap, message };
}

/** JSON body of an HTTP error, as docs/protocol.md, "Errors", fixes it. */
export function errorBody(code: ErrorCode, message: string): string {
  return JSON.stringify({ error: { code, message } });
}

import { MAX_DEVICE_BODY_BYTES } from '../../../shared/wire/validate.js';
import { UpdaterError } from '../../../shared/errors.js';
import { parseJson, readBody } from '../server/body.js';
import { sendJson } from '../server/respond.js';
import type { DeviceRoute, RouteDeps } from './route-types.js';

// POST /auth over HTTP (devices.auth: on; docs/protocol.md "Device authentication"): JSON in,
// a token (200) or a pending answer (202) out; refusals are the registry's 401 / 403 / 429.

export function registerDeviceAuthRoute(route: DeviceRoute, deps: RouteDeps): void {
  route('post', '/auth', 'auth', async (ex, req) => {
    const fields = parseJson(await readBody(ex, req, MAX_DEVICE_BODY_BYTES));
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) throw new UpdaterError('INVALID_FIELD', 'the body must be a JSON object');
    const outcome = await deps.gate.authenticate(fields as Record<string, unknown>);
    if (outcome.state === 'accepted') sendJson(ex, 200, { token: outcome.token, expires_in: outcome.expiresIn });
    else sendJson(ex, 202, { state: 'pending', retry_after: outcome.retryAfter });
  });
}

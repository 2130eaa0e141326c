import { randomBytes } from 'node:crypto';
import { signAuthRequest, type AuthRequest } from '../../src/shared/device-identity/auth-request.js';
import { TokenRefused } from '../../src/shared/device-identity/token.js';
import { decodeAuthAnswer, encodeAuthRequest, encodeHeartbeat, encodeReport } from '../../src/shared/wire/cbor.js';
import type { CoapClient, CoapResponse } from './coap.js';
import { postJson } from './http.js';

// A device with an identity, as the tests play it: its key, its signed auth requests over
// either transport, and heartbeats and reports carrying a token (or any token the test likes).

export const now = () => Math.floor(Date.now() / 1000);

/** The reason a token check refused with, or undefined when it let the request in. */
export function tokenRefusal(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    if (err instanceof TokenRefused) return err.reason;
    throw err;
  }
}

export class TestDevice {
  readonly seed = new Uint8Array(randomBytes(32));
  private last = 0;

  constructor(readonly id: string) {}

  /**
   * A signed request at `timestamp` (a test's choice: skewed, replayed), or else a second after
   * the last one made this way, so that each is newer than the one before.
   */
  request(timestamp?: number): AuthRequest {
    if (timestamp !== undefined) return signAuthRequest(this.seed, this.id, timestamp);
    this.last = Math.max(now(), this.last + 1);
    return signAuthRequest(this.seed, this.id, this.last);
  }
}

export function authJson(request: AuthRequest): Record<string, unknown> {
  return { device_id: request.deviceId, public_key: request.publicKey, timestamp: request.timestamp, signature: request.signature };
}

export async function authHttp(url: string, request: AuthRequest): Promise<{ status: number; json: any }> {
  return postJson(`${url}/auth`, authJson(request));
}

/** Authenticates over HTTP and returns the token; throws on anything but 200. */
export async function tokenHttp(url: string, device: TestDevice): Promise<string> {
  const { status, json } = await authHttp(url, device.request());
  if (status !== 200) throw new Error(`auth answered ${status}: ${JSON.stringify(json)}`);
  return json.token;
}

export async function authCoap(client: CoapClient, request: AuthRequest): Promise<{ code: string; answer: Record<string, unknown> | undefined; diagnostic: string }> {
  const response = await client.request({ method: 'POST', path: '/auth', payload: encodeAuthRequest(authJson(request)), contentFormat: 60 });
  const ok = response.code === '2.05';
  return { code: response.code, answer: ok ? decodeAuthAnswer(response.payload) : undefined, diagnostic: ok ? '' : response.payload.toString() };
}

export function heartbeatBody(deviceId: string, versionHash: string): Record<string, unknown> {
  return {
    device_id: deviceId, version_hash: versionHash, hw_info: { arch: 'amd64', os: 'linux', free_ram: 1 << 28, free_disk: 1 << 30 },
    timestamp: now(), version: '1.0.0',
  };
}

export function reportBody(deviceId: string, previousHash: string, newHash: string, success: boolean): Record<string, unknown> {
  return { device_id: deviceId, previous_hash: previousHash, new_hash: newHash, success, rollback_reason: success ? '' : 'boot failed', timestamp: now() };
}

const bearer = (token: string | undefined): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` });

export function heartbeatHttp(url: string, token: string | undefined, deviceId: string, versionHash: string) {
  return postJson(`${url}/heartbeat`, heartbeatBody(deviceId, versionHash), bearer(token));
}

export function reportHttp(url: string, token: string | undefined, deviceId: string, previousHash: string, newHash: string, success: boolean) {
  return postJson(`${url}/report`, reportBody(deviceId, previousHash, newHash, success), bearer(token));
}

export async function getHttp(url: string, token: string | undefined): Promise<{ status: number; body: Buffer }> {
  const response = await fetch(url, { headers: bearer(token) });
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
}

const authOption = (token: string | undefined) => (token === undefined ? [] : [{ name: 'Uri-Query', value: Buffer.from(`auth=${token}`) }]);

export function heartbeatCoap(client: CoapClient, token: string | undefined, deviceId: string, versionHash: string): Promise<CoapResponse> {
  return client.request({ method: 'POST', path: '/heartbeat', payload: encodeHeartbeat(heartbeatBody(deviceId, versionHash)), contentFormat: 60, extraOptions: authOption(token) });
}

export function reportCoap(client: CoapClient, token: string | undefined, deviceId: string, previousHash: string, newHash: string, success: boolean): Promise<CoapResponse> {
  return client.request({ method: 'POST', path: '/report', payload: encodeReport(reportBody(deviceId, previousHash, newHash, success)), contentFormat: 60, extraOptions: authOption(token) });
}

export function getCoap(client: CoapClient, token: string | undefined, path: string): Promise<CoapResponse> {
  return client.request({ method: 'GET', path, extraOptions: authOption(token) });
}

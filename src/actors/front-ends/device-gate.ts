import { setTimeout as sleep } from 'node:timers/promises';
import { Counter } from 'prom-client';
import { verifyAuthRequest, type AuthOutcome } from '../../shared/device-identity/auth-request.js';
import { TokenChecker, TokenRefused, type TokenPass, type TokenRefusal } from '../../shared/device-identity/token.js';
import { isUpdaterError } from '../../shared/errors.js';
import type { ActorContext } from '../runtime.js';

// Device identity at a front-end (HTTP and CoAP alike): the token check on every device request
// and the first half of POST /auth. The check asks no one: the token key and the revocations
// come from the fleet actor, which answers each question of this loop when they change.
//
//   fleet ─deviceTrust(version)─▶ TokenChecker ◀─ admit(token) or admitBearer(header), requireDevice(device id) on each request
//   device ─POST /auth─▶ verify signature + clock here ─▶ fleet (replay, binding, state, token)

/** How long a front-end waits for its first trust at start before it gives up (and is restarted). */
const FIRST_TRUST_MS = 15_000;
const RETRY_MS = 1_000;

/** What let a device request in: its token's pass, its client certificate's device, or nothing with auth off. */
export type DevicePass = TokenPass | { readonly certifiedId: string } | undefined;

export type AuthRequestOutcome = 'accepted' | 'pending' | 'invalid' | 'failed' | 'not_accepted' | 'key_mismatch' | 'pending_full' | 'error';

const OUTCOME_OF: Record<string, AuthRequestOutcome> = {
  DEVICE_AUTH_FAILED: 'failed', DEVICE_NOT_ACCEPTED: 'not_accepted', DEVICE_KEY_MISMATCH: 'key_mismatch', DEVICE_PENDING_FULL: 'pending_full',
  INVALID_FIELD: 'invalid', MALFORMED_BODY: 'invalid', BODY_TOO_LARGE: 'invalid', UNSUPPORTED_MEDIA_TYPE: 'invalid',
};

export class DeviceGate {
  private readonly checker = new TokenChecker();
  private readonly refusals: Record<TokenRefusal, number> = { missing: 0, invalid: 0, expired: 0, revoked: 0, mismatch: 0 };
  private readonly outcomes = new Map<AuthRequestOutcome, number>();
  private stopped = false;

  constructor(readonly on: boolean, private readonly ctx: ActorContext) {
    const { refusals, outcomes } = this;
    new Counter({
      name: 'updater_device_tokens_refused_total', help: 'Device requests refused for their token, by reason (missing, invalid, expired, revoked, mismatch)',
      labelNames: ['reason'], registers: [ctx.registry],
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(refusals)) this.inc({ reason }, n);
      },
    });
    new Counter({
      name: 'updater_device_auth_requests_total', help: 'POST /auth requests by outcome',
      labelNames: ['outcome'], registers: [ctx.registry],
      collect() {
        this.reset();
        for (const [outcome, n] of outcomes) this.inc({ outcome }, n);
      },
    });
  }

  /**
   * With devices.auth on, throws DEVICE_TOKEN_INVALID unless the token (or the client
   * certificate's device, `certifiedId`) lets the request in; answers the pass that
   * requireDevice then holds against the device id the body names. Called before the body is
   * parsed, so a request without a valid token costs no parse. A plain call: the heartbeat
   * path's cost.
   */
  admit(token: string | undefined, certifiedId?: string): DevicePass {
    if (!this.on) return undefined;
    return this.check(token, false, certifiedId);
  }

  /** admit() for the `Authorization` header of an HTTP request ('' when absent). */
  admitBearer(header: string, certifiedId?: string): DevicePass {
    if (!this.on) return undefined;
    return this.check(header, true, certifiedId);
  }

  private check(text: string | undefined, bearer: boolean, certifiedId: string | undefined): DevicePass {
    try {
      // A verified client certificate (HTTP front-end, tls.client_ca_file) stands in for the token.
      if (certifiedId !== undefined) {
        this.checker.verifyCertified(certifiedId);
        return { certifiedId };
      }
      const now = Math.floor(Date.now() / 1000);
      return bearer ? this.checker.verifyBearer(text!, now) : this.checker.verify(text, now);
    } catch (err) {
      throw this.refused(err);
    }
  }

  /** Throws DEVICE_MISMATCH unless the request's pass is `deviceId`'s (heartbeat, report). */
  requireDevice(pass: DevicePass, deviceId: string): void {
    if (pass === undefined) return;
    try {
      if (typeof pass === 'number') this.checker.requireOwner(pass, deviceId);
      else if (pass.certifiedId !== deviceId) throw new TokenRefused('mismatch', 'the request names another device than its client certificate');
    } catch (err) {
      throw this.refused(err);
    }
  }

  private refused(err: unknown): unknown {
    if (err instanceof TokenRefused) this.refusals[err.reason]++;
    return err;
  }

  /** POST /auth: the body's fields (JSON keys), checked here, decided by the fleet actor. */
  async authenticate(fields: Record<string, unknown>): Promise<AuthOutcome> {
    try {
      const request = verifyAuthRequest(fields, Math.floor(Date.now() / 1000));
      const outcome = await this.ctx.call('fleet', (f) => f.authenticate(request));
      this.count(outcome.state);
      return outcome;
    } catch (err) {
      this.count((isUpdaterError(err) && OUTCOME_OF[err.code]) || 'error');
      throw err;
    }
  }

  /** Gets the first trust (with auth on), then follows its changes until stop(). */
  async start(): Promise<void> {
    if (!this.on) return;
    const deadline = Date.now() + FIRST_TRUST_MS;
    for (;;) {
      try {
        this.checker.update(await this.ctx.call('fleet', (f) => f.deviceTrust('')));
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(RETRY_MS);
      }
    }
    void this.follow();
  }

  stop(): void {
    this.stopped = true;
  }

  private count(outcome: AuthRequestOutcome): void {
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
  }

  private async follow(): Promise<void> {
    while (!this.stopped) {
      try {
        this.checker.update(await this.ctx.call('fleet', (f) => f.deviceTrust(this.checker.version)));
      } catch (err) {
        // The fleet actor is restarting: the last trust stays in force meanwhile.
        if (!this.stopped) this.ctx.log.debug({ err }, 'device trust not refreshed; asking again');
        await sleep(RETRY_MS);
      }
    }
  }
}

/** The gate of a front-end, following the fleet's trust when devices.auth is on. */
export async function deviceGateFor(ctx: ActorContext): Promise<DeviceGate> {
  const gate = new DeviceGate(ctx.config.devices.auth === 'on', ctx);
  await gate.start();
  return gate;
}

import type { CoapLoadClient } from './coap-client.js';
import { withTimeout } from './deadline.js';
import { newIdentities, newIdentity, preauthorize, signedAuthFields } from './simulated-identity.js';
import type { Device } from './fleet.js';
import type { AuthAnswer, HttpLoadClient } from './http-client.js';

// Device authentication for the load harness (--device-auth): each simulated device gets an
// Ed25519 identity, authenticates over its own transport as the agent does (agent/enroll.ts),
// keeps its token on the Device (so a soak's plateau reuses the fill's tokens), sends it on
// every request, and on a 401 / 4.01 authenticates once more and repeats the request. The
// whole fleet is enrolled before the heartbeat schedule starts, at a bounded rate and a bounded
// number in flight, so that enrollment neither measures as heartbeat latency nor floods the
// front-ends' signature checks.

export interface DeviceAuthOptions {
  /** POST /auth requests per second while the fleet enrolls. */
  readonly ratePerSecond: number;
  /** Add every key with POST /admin/devices/preauthorize first (enrollment: preauthorized); needs the admin token. */
  readonly preauthorize: boolean;
}

export interface DeviceAuthReport {
  /** Devices that hold a token at the end of the enrollment. */
  readonly enrolled: number;
  readonly enroll_seconds: number;
  /** Every POST /auth sent (enrollment, first contact later, re-authentication). */
  readonly auth_requests: number;
  /** Requests answered 401 / 4.01 and answered as asked after a fresh token (not errors), by transport. */
  readonly reauthenticated: Record<string, number>;
}

/** POST /auth requests in flight at most while the fleet enrolls. */
const ENROLL_IN_FLIGHT = 32;
/** The harness gives up on an auth answer after this (as on a heartbeat's). */
const AUTH_DEADLINE_MS = 10_000;
const TICK_MS = 20;

export class LoadAuth {
  private authRequests = 0;
  private readonly reauthenticated: Record<string, number> = {};
  private enrolled = 0;
  private enrollSeconds = 0;

  constructor(
    private readonly http: HttpLoadClient,
    private readonly coap: CoapLoadClient | undefined,
    private readonly options: DeviceAuthOptions,
    /** Counts an error of a kind, as the run's other errors are. */
    private readonly error: (kind: string) => void,
  ) {}

  /**
   * Enrolls every device that holds no token yet, at most `ratePerSecond` a second. A device
   * that fails is counted (by kind) and tries again at its first heartbeat.
   */
  async enroll(fleet: readonly Device[], baseUrl: string, adminToken: string | undefined, progress: (line: string) => void): Promise<void> {
    const started = performance.now();
    const todo = fleet.filter((d) => !d.identity?.token);
    const keyless = todo.filter((d) => !d.identity);
    (await newIdentities(keyless.length)).forEach((identity, i) => (keyless[i]!.identity = identity));
    if (this.options.preauthorize) {
      if (!adminToken) throw new Error('--preauthorize needs --admin-token-file');
      await preauthorize(baseUrl, adminToken, todo.map((d) => ({ id: d.id, identity: d.identity! })));
    }
    let next = 0;
    const worker = async () => {
      while (next < todo.length) {
        // Open loop on the clock: the n-th request goes no earlier than n / rate seconds in.
        const due = started + (next / this.options.ratePerSecond) * 1000;
        if (performance.now() < due) {
          await new Promise((r) => setTimeout(r, Math.max(TICK_MS, due - performance.now())));
          continue;
        }
        const device = todo[next++]!;
        await this.authenticate(device).catch((err: NodeJS.ErrnoException) => this.error(err.code!));
      }
    };
    const timer = setInterval(() => progress(`enrolling: ${next} of ${todo.length} devices asked`), 1000);
    try {
      await Promise.all(Array.from({ length: Math.min(ENROLL_IN_FLIGHT, todo.length) }, worker));
    } finally {
      clearInterval(timer);
    }
    this.enrolled += todo.filter((d) => d.identity?.token).length;
    this.enrollSeconds += (performance.now() - started) / 1000;
  }

  /**
   * Runs one request with the device's token: authenticates first when it holds none, and once
   * more when the answer is 401 / 4.01, then repeats the request. A 401 that persists is
   * returned, for the caller to count as the error it is; a refused auth throws with its kind
   * as `code` (e.g. `http_auth_403`), and the request is not sent.
   */
  async withToken<T>(device: Device, send: (token: string) => Promise<T>, statusOf: (answer: T) => number): Promise<T> {
    if (!device.identity?.token) await this.authenticate(device);
    const answer = await send(device.identity!.token!);
    if (statusOf(answer) !== 401) return answer;
    device.identity!.token = undefined;
    await this.authenticate(device);
    const again = await send(device.identity!.token!);
    if (statusOf(again) !== 401) this.reauthenticated[device.transport] = (this.reauthenticated[device.transport] ?? 0) + 1;
    return again;
  }

  report(): DeviceAuthReport {
    return { enrolled: this.enrolled, enroll_seconds: Number(this.enrollSeconds.toFixed(2)), auth_requests: this.authRequests, reauthenticated: { ...this.reauthenticated } };
  }

  /** POST /auth over the device's transport; keeps the token, or throws with `code` the error's kind. */
  private async authenticate(device: Device): Promise<void> {
    const identity = (device.identity ??= newIdentity());
    this.authRequests++;
    const fields = signedAuthFields(identity, device.id);
    let answer: AuthAnswer;
    try {
      answer = await withTimeout(device.transport === 'coap' ? this.coap!.authenticate(fields) : this.http.authenticate(fields), AUTH_DEADLINE_MS, `${device.transport}_auth_timeout`);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw Object.assign(err as Error, { code: code?.startsWith(`${device.transport}_auth_`) ? code : `${device.transport}_auth_${code ?? (err as Error).message}` });
    }
    if (answer.token) {
      identity.token = answer.token;
      return;
    }
    throw Object.assign(new Error('auth refused'), { code: `${device.transport}_auth_${answer.pending ? 'pending' : answer.status}` });
  }
}

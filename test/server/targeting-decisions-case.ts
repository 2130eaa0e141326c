import { readFile } from 'node:fs/promises';
import t, { type Test } from 'tap';
import { inCohort } from '../../src/shared/decision/cohort.js';
import { encodeHeartbeat } from '../../src/shared/wire/cbor.js';
import { adminCall, eventually, trackOf } from '../helpers/admin.js';
import { heartbeatFieldsFor, manifestOf, type CoapClient } from '../helpers/coap.js';
import { firmware, nextVersion, type Fixture } from '../helpers/fixture.js';
import { postJson } from '../helpers/http.js';
import { localClock } from '../helpers/local-time.js';

// Targeting at the heartbeat, black-box over HTTP and CoAP (docs/rollouts.md, "Targeting"),
// shared by one SQLite server and a two-replica PostgreSQL cluster: a group step offers the
// target to the group's members only, judged at each heartbeat (a device tagged while the
// step runs is offered it at its next heartbeat, in a cluster within the documented 2 s); an
// attribute a heartbeat carries counts at once and is remembered; a window closed for the
// device answers update_available false with retry_after, one open for it offers the target;
// a start time a few seconds ahead is waited for, for real. In a cluster the operator and the
// device talk to different replicas, and the two swap from one point to the next.

interface Answer { target_hash: string; update_available: boolean; retry_after?: number }
type Attributes = Record<string, string>;

/** Where heartbeats go: a server's HTTP listener and a CoAP client of its CoAP listener. */
export interface DeviceSide { readonly url: string; readonly coap: CoapClient }

export interface DecisionSetting {
  readonly fixture: Fixture;
  /** The operator's URL and the device's side for the n-th point (in a cluster, different replicas). */
  sides(point: number): { operator: string; device: DeviceSide };
  /** What a change on the operator's side may take to decide the device's answers: 0, its next heartbeat. */
  readonly propagationMs: number;
  /** How far ahead the start time is put (seconds): far enough for the device's side to learn the rollout first. */
  readonly startDelaySeconds: number;
}

/** A device's zone without daylight saving time, so the seconds until a window opens are exact. */
const ZONE = 'Asia/Kolkata';

export function decisionsCase(name: string, start: (t: Test) => Promise<DecisionSetting>): void {
  t.test(`${name}: group steps, tags, attributes, windows and a start time decide who is offered the target`, async (t) => {
    const s = await start(t);
    const v1 = await s.fixture.writeBinary('tg-v1.bin', firmware(30_000, 'tg-v1'));
    const v2 = await s.fixture.writeBinary('tg-v2.bin', nextVersion(await readFile(v1.path), 'tg-v2'));
    let point = -1;
    let operator = '';
    let device: DeviceSide = undefined as unknown as DeviceSide;
    const next = () => ({ operator, device } = s.sides(++point));
    const admin = (method: string, path: string, body?: unknown) => adminCall(operator, method, path, body);
    const fields = (deviceId: string, artifact: string, attributes?: Attributes) =>
      ({ ...heartbeatFieldsFor(v1.hash, artifact), device_id: deviceId, ...(attributes ? { attributes } : {}) });
    const overHttp = async (deviceId: string, artifact: string, attributes?: Attributes): Promise<Answer> => {
      const { status, json } = await postJson(`${device.url}/heartbeat`, fields(deviceId, artifact, attributes));
      if (status !== 200) throw new Error(`heartbeat ${status}: ${JSON.stringify(json)}`);
      return json as Answer;
    };
    const overCoap = async (deviceId: string, artifact: string, attributes?: Attributes): Promise<Answer> => {
      const answer = await device.coap.request({ method: 'POST', path: '/heartbeat', payload: encodeHeartbeat(fields(deviceId, artifact, attributes)), contentFormat: 60 });
      if (answer.code !== '2.05') throw new Error(`CoAP heartbeat ${answer.code}`);
      return manifestOf(answer) as unknown as Answer;
    };
    const both = async (deviceId: string, artifact: string, attributes?: Attributes) =>
      [await overHttp(deviceId, artifact, attributes), await overCoap(deviceId, artifact, attributes)];
    const tryBoth = (deviceId: string, artifact: string, attributes?: Attributes) =>
      both(deviceId, artifact, attributes).catch((err: Error) => [{ error: err.message }] as unknown as Answer[]);

    /** Both transports answer as `check` wants: at the next heartbeat, or in a cluster within the bound (the time is asserted). */
    const settles = async (t: Test, what: string, deviceId: string, artifact: string, attributes: Attributes | undefined, check: (a: Answer) => boolean) => {
      const started = Date.now();
      const answers = s.propagationMs === 0 ? await both(deviceId, artifact, attributes)
        : await eventually(what, () => tryBoth(deviceId, artifact, attributes), (as) => as.every(check), s.propagationMs + 10_000);
      const took = Date.now() - started;
      t.ok(answers.every(check), `${what} (HTTP and CoAP)`);
      if (s.propagationMs > 0) t.ok(took <= s.propagationMs, `${what}: after ${took} ms on the other replica (bound ${s.propagationMs} ms)`);
      return answers;
    };
    /** Version 1 as the stable target, version 2 with `rollout`; returns once the device's side knows the rollout. */
    const publishTwo = async (t: Test, name: string, rollout: Record<string, unknown>) => {
      t.equal((await admin('POST', '/admin/artifacts', { name, version: '1', binary: v1.path })).status, 200);
      await eventually(`${name} 1 on the device's side`, () => tryBoth(`${name}-probe`, name), (as) => as.every((a) => a.target_hash === v1.hash), 15_000);
      const answer = await admin('POST', '/admin/artifacts', { name, version: '2', binary: v2.path, rollout });
      t.equal(answer.status, 200, JSON.stringify(answer.json));
      await eventually(`${name}'s rollout on the device's side`, () => trackOf(device.url, name), (tr) => tr?.rollout?.target_hash === v2.hash, 15_000);
      return answer.json;
    };

    await t.test('a group step: only members, and a device tagged while it runs at its next heartbeat', async (t) => {
      next();
      t.equal((await admin('PUT', '/admin/groups/canary', { filter: { tags: ['canary'] } })).status, 200);
      await publishTwo(t, 'lab', { steps: [{ group: 'canary' }, 100], step_interval: 'manual' });
      for (const answer of await both('lab-1', 'lab')) t.equal(answer.target_hash, v1.hash, 'not tagged: the stable target');
      // The inventory records a heartbeat after answering it (within 50 ms): a device is tagged once it is there.
      await eventually('lab-1 in the inventory', () => admin('GET', '/admin/devices/lab-1'), (a) => a.status === 200, 10_000);
      t.equal((await admin('PUT', '/admin/devices/lab-1/tags', { tags: ['canary'] })).status, 200);
      await settles(t, 'tagged canary: offered the target', 'lab-1', 'lab', undefined, (a) => a.target_hash === v2.hash);
      for (const answer of await both('lab-2', 'lab')) t.equal(answer.target_hash, v1.hash, 'another device is not');
      t.equal((await admin('PUT', '/admin/devices/lab-1/tags', { tags: [] })).status, 200);
      await settles(t, 'untagged: no longer a member', 'lab-1', 'lab', undefined, (a) => a.target_hash === v1.hash);
    });

    await t.test('attributes in the heartbeat decide membership at once, and are remembered when a heartbeat leaves them out', async (t) => {
      next();
      t.equal((await admin('PUT', '/admin/groups/rev-b', { filter: { attributes: { hw: 'B' } } })).status, 200);
      await publishTwo(t, 'sensor', { steps: [{ group: 'rev-b' }, 100], step_interval: 'manual' });
      // The group's filter reaches the device's side like any group change: another device shows when.
      await settles(t, 'the group on the device\'s side', 'sensor-probe-b', 'sensor', { hw: 'B' }, (a) => a.target_hash === v2.hash);
      for (const answer of await both('sensor-a', 'sensor', { hw: 'A' })) t.equal(answer.target_hash, v1.hash, 'hardware A: not a member');
      for (const answer of await both('sensor-b', 'sensor', { hw: 'B' })) t.equal(answer.target_hash, v2.hash, 'hardware B: offered at its first heartbeat');
      for (const answer of await both('sensor-b', 'sensor')) t.equal(answer.target_hash, v2.hash, 'without attributes: judged on the ones it sent last');
      for (const answer of await both('sensor-b', 'sensor', { hw: 'A' })) t.equal(answer.target_hash, v1.hash, 'says hardware A now: not a member at once');
      for (const answer of await both('sensor-b', 'sensor')) t.equal(answer.target_hash, v1.hash, 'and without attributes: the latest set is remembered');
      const advanced = await admin('POST', '/admin/rollout', { artifact: 'sensor', action: 'advance' });
      t.equal(advanced.status, 200);
      t.equal(advanced.json.state, 'complete', 'the last step completes it');
      await settles(t, 'complete: everyone', 'sensor-a', 'sensor', { hw: 'A' }, (a) => a.target_hash === v2.hash);
    });

    await t.test('a window open in the device\'s zone offers the target; outside its window a device gets no update and when to come back', async (t) => {
      next();
      const cohort = (prefix: string) => Array.from({ length: 500 }, (_, i) => `${prefix}-${i}`).filter((d) => inCohort(d, v2.hash, 99));
      // [now - 2 h, now + 2 h) in the device's zone: open there whatever the minute; in UTC
      // (5 h 30 min behind it) the same clock times are 3 h 30 min ahead, so closed.
      await publishTwo(t, 'day', { steps: [99, 100], window: { start: localClock(ZONE, -120), end: localClock(ZONE, 120), tz: 'device' } });
      const [inZone, inUtc] = cohort('day') as [string, string];
      // A wait names the track's target too, but with update_available false.
      await settles(t, 'window open in the device\'s zone: offered the target', inZone, 'day', { tz: ZONE }, (a) => a.update_available && a.target_hash === v2.hash);
      for (const answer of await both(inUtc, 'day')) {
        t.equal(answer.update_available, false, 'a device with no zone is judged in UTC: closed, though in the 99 % cohort');
        t.ok(answer.retry_after! > 3.5 * 3600 - 180 && answer.retry_after! <= 3.5 * 3600, `retry_after ${answer.retry_after} s: until it opens in UTC`);
      }
      // [now + 3 h, now + 5 h) in a named zone: closed for every device, whatever zone it says it is in.
      await publishTwo(t, 'night', { steps: [99, 100], window: { start: localClock(ZONE, 180), end: localClock(ZONE, 300), tz: ZONE } });
      const id = cohort('night')[0]!;
      const closed = await settles(t, 'window closed: no update, though in the 99 % cohort', id, 'night', { tz: 'UTC' }, (a) => a.update_available === false && a.retry_after !== undefined);
      for (const answer of closed) {
        t.ok(answer.retry_after! > 3 * 3600 - 180 && answer.retry_after! <= 3 * 3600, `retry_after ${answer.retry_after} s: until the window opens`);
      }
    });

    await t.test('a start time a few seconds ahead: nobody before it, the cohort after it', async (t) => {
      next();
      const startAt = Math.ceil(Date.now() / 1000) + s.startDelaySeconds;
      const published = await publishTwo(t, 'later', { steps: [100], start_at: startAt });
      t.equal(published.rollout.state, 'scheduled');
      t.equal((await trackOf(device.url, 'later')).rollout.state, 'scheduled', 'scheduled on the device\'s side too');
      let before = 0;
      for (;;) {
        const [http, coap] = await both('later-1', 'later');
        const now = Date.now() / 1000;
        if (now < startAt) {
          before++;
          t.equal(http!.target_hash, v1.hash, 'before start_at: the stable target (HTTP)');
          t.equal(coap!.target_hash, v1.hash, 'and over CoAP');
        } else if (http!.target_hash === v2.hash && coap!.target_hash === v2.hash) {
          t.ok(before > 0, `${before} heartbeats answered before start_at`);
          t.pass(`offered ${(now - startAt).toFixed(1)} s after start_at`);
          break;
        }
        if (now > startAt + 20) throw new Error('the rollout did not start');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    });
  });
}

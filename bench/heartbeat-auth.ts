import { writeFile } from 'node:fs/promises';
import { newIdentities, preauthorize, signedAuthFields } from '../src/load/simulated-identity.js';
import { ADMIN_TOKEN } from '../test/helpers/fixture.js';
import { deviceId } from './fleet-load.js';

// The heartbeat suite with `devices.auth: on` (BENCH_HEARTBEAT_AUTH=on): every device of the
// load gets a token first, as a fleet does, and every heartbeat carries its device's token.
// Enrollment follows the device-identity protocol with the load harness's identities
// (src/load/simulated-identity.ts): each device owns an Ed25519 key, the operator preauthorizes
// the keys in bulk, then each device signs its auth request and `POST /auth` answers its token.
// The tokens go to a file, one a line, the fleet's first device first, which the wrk script
// reads (fleet-load.ts writeCyclingScript).

const IN_FLIGHT = 32;

/** The config a server under the authenticated load gets (merged into its document). */
export const AUTH_CONFIG = { devices: { auth: 'on', enrollment: 'preauthorized' } } as const;

/** Enrolls devices `idOffset` … `idOffset + count - 1` on the server at `url` and writes their tokens to `file`. */
export async function enrollFleet(url: string, count: number, file: string, idOffset = 0): Promise<void> {
  const devices = (await newIdentities(count)).map((identity, n) => ({ id: deviceId(idOffset + n), identity }));
  await preauthorize(url, ADMIN_TOKEN, devices);
  const tokens = new Array<string>(count);
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < count) {
      const n = next++;
      const d = devices[n]!;
      const response = await fetch(`${url}/auth`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify(signedAuthFields(d.identity, d.id)) });
      const body = await response.json() as { token?: string };
      if (response.status !== 200 || typeof body.token !== 'string') throw new Error(`POST /auth for ${d.id} answered ${response.status}: ${JSON.stringify(body)}`);
      tokens[n] = body.token;
    }
  }));
  await writeFile(file, `${tokens.join('\n')}\n`);
}

import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { adminCall } from '../test/helpers/admin.js';
import { deviceId } from './fleet-load.js';

// The heartbeat suite with `devices.auth: on` (BENCH_HEARTBEAT_AUTH=on): every device of the
// load gets a token first, as a fleet does, and every heartbeat carries its device's token.
// Enrollment follows the device-identity protocol: each device owns an Ed25519 key; the
// operator preauthorizes the keys (at most PREAUTHORIZE_BATCH a call), then each device signs
// `updater-device-auth:v1`, its id, its public key and a timestamp, joined by "\n", and
// `POST /auth` answers its token. The tokens go to a file, one a line, device 0 first, which
// the wrk script reads (fleet-load.ts writeCyclingScript).

const PREAUTHORIZE_BATCH = 10_000;
const IN_FLIGHT = 32;
/** The DER prefix of an Ed25519 SubjectPublicKeyInfo: the raw 32-byte key follows it. */
const SPKI_PREFIX_BYTES = 12;

/** The config a server under the authenticated load gets (merged into its document). */
export const AUTH_CONFIG = { devices: { auth: 'on', enrollment: 'preauthorized' } } as const;

interface Identity {
  readonly id: string;
  readonly publicKey: string;
  readonly privateKey: ReturnType<typeof createPrivateKey>;
}

function identity(n: number): Identity {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX_BYTES);
  return { id: deviceId(n), publicKey: raw.toString('hex'), privateKey };
}

/** Enrolls devices 0 … count-1 on the server at `url` and writes their tokens to `file`. */
export async function enrollFleet(url: string, count: number, file: string): Promise<void> {
  const devices = Array.from({ length: count }, (_, n) => identity(n));
  for (let start = 0; start < count; start += PREAUTHORIZE_BATCH) {
    const batch = devices.slice(start, start + PREAUTHORIZE_BATCH).map((d) => ({ device_id: d.id, public_key: d.publicKey }));
    const answer = await adminCall(url, 'POST', '/admin/devices/preauthorize', { devices: batch });
    if (answer.status !== 200) throw new Error(`preauthorize answered ${answer.status}: ${JSON.stringify(answer.json)} (does this build have device tokens?)`);
  }
  const tokens = new Array<string>(count);
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < count) {
      const n = next++;
      const d = devices[n]!;
      const timestamp = Math.floor(Date.now() / 1000);
      const signed = ['updater-device-auth:v1', d.id, d.publicKey, String(timestamp)].join('\n');
      const signature = sign(null, Buffer.from(signed), d.privateKey).toString('hex');
      const response = await fetch(`${url}/auth`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: d.id, public_key: d.publicKey, timestamp, signature }) });
      const body = await response.json() as { token?: string };
      if (response.status !== 200 || typeof body.token !== 'string') throw new Error(`POST /auth for ${d.id} answered ${response.status}: ${JSON.stringify(body)}`);
      tokens[n] = body.token;
    }
  }));
  await writeFile(file, `${tokens.join('\n')}\n`);
}

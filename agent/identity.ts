import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { signAuthRequest, type AuthRequest } from '../src/shared/device-identity/auth-request.js';
import { replaceFileDurably } from '../src/shared/durable-file.js';
import { UpdaterError, isUpdaterError } from '../src/shared/errors.js';
import type { Logger } from '../src/shared/logger.js';
import { readPrivateKeyFile, writePrivateKeyFile } from '../src/shared/signing.js';

// The device's identity (docs/agent.md, "Identity"): an Ed25519 key made at first start in
// identity_key_file (PKCS#8 PEM, mode 0600), never sent anywhere; and the token the server gave
// for it, kept beside the agent's state so a restart does not enroll again while it lives.
// Auth timestamps only ever rise, across restarts too, since the server refuses one that is
// not newer than the last it verified.

const TOKEN_FILE = '.device-token.json';
/** A token is renewed once less than this share of its life, or a minute, is left. */
const RENEW_SHARE = 0.1;
const RENEW_FLOOR_S = 60;

interface TokenDoc {
  token: string;
  /** Unix seconds. */
  expires_at: number;
  /** Seconds the token was issued for (the renewal margin is a share of it). */
  lifetime: number;
  /** The timestamp of the last auth request sent: the next must be newer. */
  last_timestamp: number;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

export class DeviceIdentity {
  private doc: TokenDoc = { token: '', expires_at: 0, lifetime: 0, last_timestamp: 0 };

  private constructor(readonly deviceId: string, private readonly seed: Uint8Array, private readonly tokenPath: string, private readonly log: Logger) {}

  /** Loads the key (making it on first start) and the kept token. */
  static async open(deviceId: string, keyFile: string, slotDir: string, log: Logger): Promise<DeviceIdentity> {
    const seed = await loadOrCreateKey(keyFile, log);
    const identity = new DeviceIdentity(deviceId, seed, join(slotDir, TOKEN_FILE), log);
    await identity.load();
    return identity;
  }

  /** The token while it has more than the renewal margin left; undefined otherwise. */
  get token(): string | undefined {
    const margin = Math.max(RENEW_FLOOR_S, Math.ceil(this.doc.lifetime * RENEW_SHARE));
    return this.doc.token && this.doc.expires_at - nowSeconds() > margin ? this.doc.token : undefined;
  }

  /** A signed auth request whose timestamp is newer than any sent before; kept before it is sent. */
  async nextRequest(): Promise<AuthRequest> {
    this.doc.last_timestamp = Math.max(nowSeconds(), this.doc.last_timestamp + 1);
    await this.save();
    return signAuthRequest(this.seed, this.deviceId, this.doc.last_timestamp);
  }

  async keep(token: string, expiresIn: number): Promise<void> {
    this.doc = { ...this.doc, token, expires_at: nowSeconds() + expiresIn, lifetime: expiresIn };
    await this.save();
  }

  /** The server refused the token (expired, revoked, another key): the next request authenticates first. */
  async forget(): Promise<void> {
    this.doc = { ...this.doc, token: '', expires_at: 0, lifetime: 0 };
    await this.save();
  }

  private async load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.tokenPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    try {
      const doc = JSON.parse(text) as Partial<TokenDoc>;
      const whole = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);
      this.doc = {
        token: typeof doc.token === 'string' && doc.token.length <= 64 ? doc.token : '',
        expires_at: whole(doc.expires_at), lifetime: whole(doc.lifetime), last_timestamp: whole(doc.last_timestamp),
      };
    } catch {
      // A damaged token file costs one enrollment, never the device.
      this.log.error({ path: this.tokenPath }, 'device token file is not valid JSON; authenticating afresh');
    }
  }

  private save(): Promise<void> {
    return replaceFileDurably(this.tokenPath, `${JSON.stringify(this.doc)}\n`);
  }
}

async function loadOrCreateKey(path: string, log: Logger): Promise<Uint8Array> {
  const exists = await stat(path).then(() => true, (err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return false;
    throw err;
  });
  if (!exists) {
    const publicKey = await writePrivateKeyFile(path);
    log.info({ path, public_key: publicKey }, 'device identity key created');
  }
  try {
    return await readPrivateKeyFile(path);
  } catch (err) {
    throw new UpdaterError('AGENT_IDENTITY_INVALID', `identity_key_file: ${path} ${isUpdaterError(err) ? err.message.replace(/^signing\.private_key_file: \S+ /, '') : (err as Error).message}`);
  }
}

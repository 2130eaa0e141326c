import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseDuration } from '../shared/duration.js';
import { signCertificate, type KeyCertificate } from '../shared/release/certificate.js';
import { readPrivateKeyFile } from '../shared/signing.js';

// `updater certify`: the offline root key vouches for a signing key (docs/operations.md, "Key
// rotation"). The root key never needs to be on the server; only the certificate does.

export const CERTIFY_HELP = `usage: updater certify --root ROOT_KEY --key SIGNING_PUBKEY_HEX --valid 365d --serial N --out FILE

Writes a certificate of the signing key SIGNING_PUBKEY_HEX (64 hex characters, as "updater
keygen" or "updater pubkey" print it), signed by the root key in ROOT_KEY (any key "updater
keygen" made, kept offline), valid from now for the given duration, under serial N (a
non-negative integer; agents move to a higher serial and never back). FILE is JSON
{"public_key","not_before","not_after","serial","signature"}, the file signing.certificate_file
names; it is never overwritten. Prints the certificate on stdout.
`;

export async function certifyCommand(args: string[], nowMs = Date.now()): Promise<number> {
  let values: Record<string, string | undefined>;
  try {
    values = parseArgs({ args, options: { root: { type: 'string' }, key: { type: 'string' }, valid: { type: 'string' }, serial: { type: 'string' }, out: { type: 'string' } }, strict: true }).values;
  } catch (err) {
    return usage((err as Error).message);
  }
  const { root, key, valid, serial, out } = values;
  if (!root || !key || !valid || serial === undefined || !out) return usage('--root, --key, --valid, --serial and --out are required');
  if (!/^[0-9a-f]{64}$/.test(key)) return usage('--key must be the signing key\'s public key, 64 lowercase hex characters');
  const validMs = parseDuration(valid);
  if (validMs === undefined || validMs < 1000) return usage(`--valid must be a duration like 365d or 720h (got ${JSON.stringify(valid)})`);
  if (!/^\d{1,15}$/.test(serial)) return usage(`--serial must be a non-negative integer (got ${JSON.stringify(serial)})`);
  try {
    const rootKey = await readPrivateKeyFile(root);
    const notBefore = Math.floor(nowMs / 1000);
    const cert: KeyCertificate = signCertificate(rootKey, {
      public_key: key, not_before: notBefore, not_after: notBefore + Math.floor(validMs / 1000), serial: Number(serial),
    });
    const text = `${JSON.stringify(cert, null, 2)}\n`;
    await writeFile(out, text, { flag: 'wx' });
    process.stdout.write(text);
    return 0;
  } catch (err) {
    const message = (err as NodeJS.ErrnoException).code === 'EEXIST' ? `${out} already exists; refusing to overwrite a certificate` : (err as Error).message.replace(/^signing\.private_key_file: /, '--root: ');
    process.stderr.write(`updater certify: ${message}\n`);
    return 1;
  }
}

function usage(problem: string): number {
  process.stderr.write(`updater certify: ${problem}\n\n${CERTIFY_HELP}`);
  return 2;
}

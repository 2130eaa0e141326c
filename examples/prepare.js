#!/usr/bin/env node
// Creates what examples/updater.yaml refers to, once: a signing key, an admin token and a
// sample binary. Existing files are kept, so the example keeps its identity across runs.
import { randomBytes, createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writePrivateKeyFile } from '../dist/src/shared/signing.js';

const here = dirname(fileURLToPath(import.meta.url));
mkdirSync(join(here, 'keys'), { recursive: true, mode: 0o700 });
mkdirSync(join(here, 'bin'), { recursive: true });

const keyPath = join(here, 'keys', 'signing.key');
if (!existsSync(keyPath)) {
  const publicKey = await writePrivateKeyFile(keyPath);
  writeFileSync(join(here, 'keys', 'signing.pub'), `${publicKey}\n`);
  console.log(`example: created ${keyPath} (public key ${publicKey}, also in keys/signing.pub)`);
}
const tokenPath = join(here, 'keys', 'admin.token');
if (!existsSync(tokenPath)) {
  writeFileSync(tokenPath, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  console.log(`example: created ${tokenPath}`);
}
const binaryPath = join(here, 'bin', 'app-1.0.0');
if (!existsSync(binaryPath)) {
  // 1 MiB of deterministic pseudo-random bytes stands in for a firmware image.
  const chunks = [];
  let block = Buffer.from('updater example binary 1.0.0');
  for (let size = 0; size < 1 << 20; size += 32) {
    block = createHash('sha256').update(block).digest();
    chunks.push(block);
  }
  writeFileSync(binaryPath, Buffer.concat(chunks), { mode: 0o755 });
  console.log(`example: created sample binary ${binaryPath}`);
}

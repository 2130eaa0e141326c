import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { loadSigningKey } from '../../../src/actors/manifester/signing-key.js';
import type { Config } from '../../../src/shared/config/types.js';
import type { Logger } from '../../../src/shared/logger.js';
import { signCertificate } from '../../../src/shared/release/certificate.js';
import { makeFixture } from '../../helpers/fixture.js';

// The signing key's certificate at start: it must certify this key; one near its end is a WARN.

const fixture = await makeFixture();
t.teardown(() => fixture.cleanup());
const root = new Uint8Array(32).fill(4);
const NOW = 1_790_000_000;

function recorder(): { log: Logger; lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_fields: unknown, msg: string) => lines.push({ level, msg });
  return { log: { warn: at('warn'), error: at('error'), info: at('info'), debug: at('debug') } as unknown as Logger, lines };
}

async function configWith(name: string, publicKey: string, days: number): Promise<Config> {
  const path = join(fixture.dir, name);
  await writeFile(path, JSON.stringify(signCertificate(root, { public_key: publicKey, not_before: NOW, not_after: NOW + days * 86_400, serial: 1 })));
  return { signing: { privateKeyFile: fixture.keyPath, certificateFile: path, releaseTtlMs: 86_400_000 } } as unknown as Config;
}

t.test('a certificate ending within 30 days is a WARN at start; one with a year left is silent', async (t) => {
  const near = recorder();
  const key = await loadSigningKey(await configWith('near.json', fixture.publicKey, 10), near.log, NOW * 1000);
  t.equal(key.certificate?.serial, 1);
  t.match(near.lines, [{ level: 'warn', msg: /expires within 30 days/ }]);
  const far = recorder();
  await loadSigningKey(await configWith('far.json', fixture.publicKey, 365), far.log, NOW * 1000);
  t.same(far.lines, []);
});

t.test('a certificate of another key stops the start with CONFIG_INVALID', async (t) => {
  await t.rejects(loadSigningKey(await configWith('other.json', 'ee'.repeat(32), 365), recorder().log, NOW * 1000),
    { code: 'CONFIG_INVALID', message: /not this server's signing key/ });
});

import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import t from 'tap';
import { HEARTBEAT_KEYS, HW_INFO_KEYS, MANIFEST_KEYS, REPORT_KEYS } from '../../src/shared/wire/keys.js';
import { REPO_ROOT } from '../helpers/server.js';
import { protocolExamples } from './protocol-examples.js';
import { needs } from '../helpers/system-tools.js';

// docs/protocol.md is the wire reference device makers write clients from: its key tables
// must be the code's, its example bytes what the code produces, and no document may send a
// reader outside the repository.

const readDoc = (name: string) => readFile(join(REPO_ROOT, name), 'utf8');

t.test('the example bytes are what the server\'s encoders and signer produce', async (t) => {
  const doc = await readDoc('docs/protocol.md');
  const compact = doc.replace(/\s+/g, '');
  for (const [name, value] of Object.entries(protocolExamples())) {
    t.ok(compact.includes(value.replace(/\s+/g, '')), `${name} is shown (regenerate with: node dist/test/docs/protocol-examples.js)`);
  }
});

t.test('the signature example verifies with the OpenSSL recipe the doc gives', needs('openssl'), async (t) => {
  const doc = await readDoc('docs/protocol.md');
  const field = (name: string) => new RegExp(`^${name}\\s+([0-9a-f]+)$`, 'm').exec(doc)?.[1] ?? '';
  const prefix = /DER prefix `([0-9a-f]+)`/.exec(doc)?.[1] ?? '';
  const dir = await mkdtemp(join(tmpdir(), 'updater-doc-sig-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'msg.bin'), Buffer.from(field('message'), 'hex'));
  await writeFile(join(dir, 'sig.bin'), Buffer.from(field('signature'), 'hex'));
  await writeFile(join(dir, 'pub.der'), Buffer.from(prefix + field('public key'), 'hex'));
  t.equal(field('message'), field('target_hash') + field('delta_hash'), 'message = target_hash || delta_hash');
  execFileSync('openssl', ['pkey', '-pubin', '-inform', 'DER', '-in', join(dir, 'pub.der'), '-out', join(dir, 'pub.pem')]);
  const out = execFileSync('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', join(dir, 'pub.pem'), '-rawin',
    '-in', join(dir, 'msg.bin'), '-sigfile', join(dir, 'sig.bin')], { encoding: 'utf8' });
  t.match(out, /Signature Verified Successfully/);
  const flipped = Buffer.from(field('signature'), 'hex');
  flipped[0] = flipped[0]! ^ 1;
  await writeFile(join(dir, 'sig.bin'), flipped);
  t.throws(() => execFileSync('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', join(dir, 'pub.pem'), '-rawin',
    '-in', join(dir, 'msg.bin'), '-sigfile', join(dir, 'sig.bin')], { stdio: 'pipe' }), 'a changed signature does not verify');
});

t.test('the CBOR key tables are the codec\'s', async (t) => {
  const doc = await readDoc('docs/protocol.md');
  const tableUnder = (heading: string) => {
    const section = doc.slice(doc.indexOf(`\n### ${heading}`) + 1).split(/\n#{2,3} /)[0]!;
    return Object.fromEntries([...section.matchAll(/^\| [^|]+ \| `([a-z_]+)` \| (\d+) \|/gm)].map((m) => [m[1], Number(m[2])]));
  };
  t.same(tableUnder('Heartbeat'), HEARTBEAT_KEYS, 'heartbeat');
  t.same(tableUnder('hw_info'), HW_INFO_KEYS, 'hw_info');
  t.same(tableUnder('Manifest'), MANIFEST_KEYS, 'manifest');
  t.same(tableUnder('Report'), REPORT_KEYS, 'report');
});

async function markdownFiles(): Promise<string[]> {
  const docs = (await readdir(join(REPO_ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  return ['README.md', 'bench/README.md', ...docs];
}

t.test('README and docs link only inside the repository, to files that exist', async (t) => {
  for (const file of await markdownFiles()) {
    const text = await readDoc(file);
    t.notMatch(text, /\.\.\/shared|interface\.md|update-distribution-service\.md|\bspec(ification)? (part )?\d/i, `${file}: no reference to files users do not have`);
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) {
        t.fail(`${file} links outside the repository: ${target}`);
        continue;
      }
      const path = resolve(REPO_ROOT, dirname(file), target!.split('#')[0]!);
      t.ok(path.startsWith(REPO_ROOT + '/'), `${file}: ${target} stays in the repository`);
      t.ok(await stat(path).then(() => true, () => false), `${file}: ${target} exists`);
    }
  }
});

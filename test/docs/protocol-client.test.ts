import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Decoder, Encoder } from 'cbor-x';
import t, { type Test } from 'tap';
import { CoapClient } from '../helpers/coap.js';
import { firmware, freePort, makeFixture, nextVersion } from '../helpers/fixture.js';
import { REPO_ROOT, startTestServer } from '../helpers/server.js';
import { needs } from '../helpers/system-tools.js';

// A device client written from docs/protocol.md alone: the keys come from the doc's tables,
// the signed bytes, Block2 values and file formats from its text, and it uses no module of
// this repository's server, agent or wire code. Stock tools (zstd, bspatch) rebuild the
// target. If the doc and the server drift apart, this client stops interoperating.

type KeyTable = Map<string, number>;

/** Reads `| field | \`json_key\` | N | type | rules |` rows of the table below `### {heading}`. */
function keyTable(doc: string, heading: string): KeyTable {
  const start = doc.indexOf(`\n### ${heading}`);
  if (start < 0) throw new Error(`docs/protocol.md has no section "${heading}"`);
  const section = doc.slice(start + 1).split(/\n#{2,3} /)[0]!;
  const table = new Map<string, number>();
  for (const match of section.matchAll(/^\| [^|]+ \| `([a-z_]+)` \| (\d+) \|/gm)) table.set(match[1]!, Number(match[2]));
  if (table.size === 0) throw new Error(`no key table under "${heading}"`);
  return table;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** "the DER prefix `…` followed by the 32 key bytes": read from the doc too. */
function ed25519Verifier(doc: string, publicKeyHex: string): (message: Buffer, signatureHex: string) => boolean {
  const prefix = /DER prefix `([0-9a-f]+)`/.exec(doc)?.[1];
  if (!prefix) throw new Error('the doc names no SubjectPublicKeyInfo prefix');
  const key = createPublicKey({ key: Buffer.from(prefix + publicKeyHex, 'hex'), format: 'der', type: 'spki' });
  return (message, signatureHex) => verify(null, message, key, Buffer.from(signatureHex, 'hex'));
}

/** The checks of "What a manifest means", step 1. */
function checkManifest(t: Test, m: Record<string, any>, running: string, verifies: (msg: Buffer, sig: string) => boolean): string {
  t.equal(m.update_available, true, 'an update is offered');
  t.match(m.signature, /^[0-9a-f]{128}$/, 'signed');
  const message = Buffer.concat([Buffer.from(m.target_hash, 'hex'), Buffer.from(m.delta_hash, 'hex')]);
  t.equal(message.length, 64, 'the signed message is 64 bytes');
  t.ok(verifies(message, m.signature), 'the signature verifies with the public key over raw(target_hash) || raw(delta_hash)');
  t.equal(m.delta_endpoint, `/delta/${running}/${m.target_hash}`, 'delta mode, from the running hash to the target');
  t.equal(m.binary_endpoint, undefined, 'exactly one endpoint');
  t.equal(m.total_chunks, Math.ceil(m.delta_size / m.chunk_size), 'total_chunks = ceil(delta_size / chunk_size)');
  return m.delta_endpoint;
}

/** "Transfer files": zstd -d, then bspatch running new patch. */
async function rebuild(dir: string, transfer: Buffer, runningPath: string, name: string): Promise<Buffer> {
  const zst = join(dir, `${name}.zst`);
  await writeFile(zst, transfer);
  execFileSync('zstd', ['-d', '-q', '-f', zst, '-o', join(dir, `${name}.patch`)]);
  execFileSync('bspatch', [runningPath, join(dir, `${name}.bin`), join(dir, `${name}.patch`)]);
  return readFile(join(dir, `${name}.bin`));
}

t.test('a client written only from docs/protocol.md updates a device over HTTP and CoAP', needs('zstd', 'bspatch'), async (t) => {
  const doc = await readFile(join(REPO_ROOT, 'docs', 'protocol.md'), 'utf8');
  const keys = {
    heartbeat: keyTable(doc, 'Heartbeat'),
    hwInfo: keyTable(doc, 'hw_info'),
    manifest: keyTable(doc, 'Manifest'),
    report: keyTable(doc, 'Report'),
  };
  t.same([...keys.heartbeat.keys()].sort(), ['artifact', 'attributes', 'delta_formats', 'device_id', 'hw_info', 'timestamp', 'version', 'version_hash'], 'the heartbeat table names eight keys');

  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const v1Bytes = firmware(400_000, 'doc-1');
  const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
  const v2 = await fixture.writeBinary('v2.bin', nextVersion(v1Bytes, 'doc-2'));
  const coapPort = await freePort();
  const server = await startTestServer(fixture, [
    { name: 'app', os: 'linux', arch: 'arm64', version: '2.0.0', binary: v2.path },
    { name: 'legacy', version: '1.0.0', binary: v1.path },
  ], { default_artifact: 'app/linux/arm64', listen: { coap: `127.0.0.1:${coapPort}` } });
  t.teardown(() => server.stop());
  const verifies = ed25519Verifier(doc, fixture.publicKey);
  const heartbeat = {
    device_id: 'doc-client-1', version_hash: v1.hash, timestamp: Math.floor(Date.now() / 1000), version: '1.0.0', artifact: 'app/linux/arm64',
    hw_info: { arch: 'arm64', os: 'linux', free_ram: 1 << 28, free_disk: 1 << 30 },
  };

  t.test('HTTP with JSON', async (t) => {
    let manifest: Record<string, any>;
    const deadline = Date.now() + 60_000;
    for (;;) {
      // Only keys the doc's table names are sent.
      const body = Object.fromEntries(Object.entries(heartbeat).filter(([k]) => keys.heartbeat.has(k)));
      const res = await fetch(`${server.url}/heartbeat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      t.equal(res.status, 200);
      manifest = await res.json() as Record<string, any>;
      for (const key of Object.keys(manifest)) t.ok(keys.manifest.has(key), `manifest key ${key} is in the doc's table`);
      if (manifest.signature !== undefined) break;
      t.ok(manifest.retry_after > 0, 'a pending answer carries retry_after');
      if (Date.now() > deadline) throw new Error('no signed manifest');
      await new Promise((r) => setTimeout(r, 200));
    }
    const endpoint = checkManifest(t, manifest, v1.hash, verifies);
    const pieces: Buffer[] = [];
    for (let offset = 0; offset < manifest.delta_size; offset += manifest.chunk_size) {
      const last = Math.min(offset + manifest.chunk_size, manifest.delta_size) - 1;
      const res = await fetch(`${server.url}${endpoint}`, { headers: { range: `bytes=${offset}-${last}` } });
      t.equal(res.status, 206, `range ${offset}-${last}: 206`);
      t.equal(res.headers.get('content-range'), `bytes ${offset}-${last}/${manifest.delta_size}`);
      pieces.push(Buffer.from(await res.arrayBuffer()));
    }
    const transfer = Buffer.concat(pieces);
    t.equal(transfer.length, manifest.delta_size, 'delta_size bytes arrived');
    t.equal(sha256(transfer), manifest.delta_hash, 'they hash to delta_hash');
    t.equal(sha256(await rebuild(fixture.dir, transfer, v1.path, 'http')), manifest.target_hash, 'zstd + bspatch rebuild target_hash');
    t.equal(manifest.target_hash, v2.hash);
    const report = { device_id: 'doc-client-1', previous_hash: v1.hash, new_hash: v2.hash, success: true, rollback_reason: '', timestamp: Math.floor(Date.now() / 1000) };
    const res = await fetch(`${server.url}/report`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(report) });
    t.equal(res.status, 204, 'the report: 204');
  });

  t.test('CoAP with CBOR integer keys and Block2', async (t) => {
    const client = new CoapClient(coapPort);
    t.teardown(() => client.close());
    const encoder = new Encoder({ mapsAsObjects: false, useRecords: false });
    const decoder = new Decoder({ mapsAsObjects: false, useRecords: false });
    const toCbor = (fields: Record<string, unknown>, table: KeyTable, nested: Record<string, KeyTable> = {}): Map<number, unknown> =>
      new Map(Object.entries(fields).map(([k, v]) => [table.get(k)!, nested[k] ? toCbor(v as Record<string, unknown>, nested[k]!) : v]));
    const fromCbor = (map: Map<number, unknown>, table: KeyTable): Record<string, any> => {
      const names = new Map([...table].map(([name, n]) => [n, name]));
      return Object.fromEntries([...map].map(([n, v]) => [names.get(n) ?? `unknown:${n}`, v]));
    };
    const body = encoder.encode(toCbor({ ...heartbeat, device_id: 'doc-client-2' }, keys.heartbeat, { hw_info: keys.hwInfo }));
    t.ok(body.length <= 4096, 'the heartbeat fits the 4096-byte limit');
    // "Content-Format 60 (application/cbor)"
    const answer = await client.request({ method: 'POST', path: '/heartbeat', payload: body, contentFormat: 60 });
    t.equal(answer.code, '2.05', 'heartbeat: 2.05 Content');
    const map = decoder.decode(answer.payload) as Map<number, unknown>;
    t.ok(map instanceof Map, 'the manifest is a CBOR map');
    const manifest = fromCbor(map, keys.manifest);
    t.notOk(Object.keys(manifest).some((k) => k.startsWith('unknown:')), 'every integer key is in the doc\'s table');
    t.equal(manifest.chunk_size, 1024, 'the CoAP chunk is a Block2 size (1024 by default)');
    const endpoint = checkManifest(t, manifest, v1.hash, verifies);

    // "value = NUM × 16 + M × 8 + SZX, block size = 2^(SZX + 4)"; M is 0 in a request.
    const szx = Math.log2(manifest.chunk_size) - 4;
    const blockValue = (num: number) => {
      const raw = num * 16 + szx;
      const bytes = raw === 0 ? 0 : raw < 0x100 ? 1 : raw < 0x10000 ? 2 : 3;
      const out = Buffer.alloc(bytes);
      if (bytes) out.writeUIntBE(raw, 0, bytes);
      return out;
    };
    const pieces: Buffer[] = [];
    for (let num = 0; ; num++) {
      const block = await client.request({ method: 'GET', path: endpoint, block2: blockValue(num) });
      t.equal(block.code, '2.05');
      const value = block.option('Block2') ?? Buffer.alloc(0);
      let raw = 0;
      for (const byte of value) raw = raw * 256 + byte;
      t.equal(Math.floor(raw / 16), num, `block ${num} answered`);
      t.equal(2 ** ((raw & 7) + 4), manifest.chunk_size, 'at the size asked');
      t.same(block.option('ETag'), Buffer.from(manifest.delta_hash, 'hex').subarray(0, 8), 'ETag: the first 8 bytes of the transfer hash');
      if (num === 0) {
        const size2 = block.option('Size2')!;
        t.equal(size2.readUIntBE(0, size2.length), manifest.delta_size, 'Size2 on the first block: the total size');
      }
      pieces.push(block.payload);
      if ((raw & 8) === 0) break;
      if (num > manifest.total_chunks) throw new Error('more blocks than total_chunks');
    }
    t.equal(pieces.length, manifest.total_chunks, 'total_chunks blocks');
    const transfer = Buffer.concat(pieces);
    t.equal(sha256(transfer), manifest.delta_hash, 'the blocks hash to delta_hash');
    t.equal(sha256(await rebuild(fixture.dir, transfer, v1.path, 'coap')), v2.hash, 'zstd + bspatch rebuild the target');
    const past = await client.request({ method: 'GET', path: endpoint, block2: blockValue(manifest.total_chunks + 5) });
    t.equal(past.code, '4.02', 'a block past the end: 4.02');
    t.match(past.payload.toString(), /^INVALID_RANGE/, 'with the error code as diagnostic');
    const report = encoder.encode(toCbor({ device_id: 'doc-client-2', previous_hash: v1.hash, new_hash: v2.hash, success: true, timestamp: 1 }, keys.report));
    t.equal((await client.request({ method: 'POST', path: '/report', payload: report, contentFormat: 60 })).code, '2.04', 'the report: 2.04');
  });
});

import t from 'tap';
import { decodeCbor, decodeManifest, encodeCoapManifest, encodeHeartbeat, encodeManifest, encodeReport, heartbeatFields, reportFields } from '../../../src/shared/wire/cbor.js';
import type { Manifest } from '../../../src/messages/manifester.js';
import { validateHeartbeat } from '../../../src/shared/wire/validate.js';

const hash = 'ab'.repeat(32);

t.test('a heartbeat with integer keys validates like its JSON twin', async (t) => {
  const json = { device_id: 'd-1', version_hash: hash, hw_info: { arch: 'arm64', os: 'linux', free_ram: 1 << 28, free_disk: 2 ** 40 }, timestamp: 1_700_000_000, version: '1.0', artifact: 'app/linux/arm64' };
  const cbor = encodeHeartbeat(json);
  t.same(heartbeatFields(cbor), json, 'integer keys map back to the JSON names, nested map included');
  t.same(validateHeartbeat(heartbeatFields(cbor)), validateHeartbeat(json));
  t.same(validateHeartbeat(heartbeatFields(cbor)), {
    deviceId: 'd-1', versionHash: hash, artifact: 'app/linux/arm64', version: '1.0', hwArch: 'arm64', hwOs: 'linux', hwFreeRam: 1 << 28, hwFreeDisk: 2 ** 40, timestamp: 1_700_000_000,
  }, 'one typed heartbeat, every field read once (64-bit integers as numbers)');
  t.ok(cbor.length < JSON.stringify(json).length * 0.8, `CBOR ${cbor.length} bytes against JSON ${JSON.stringify(json).length}`);
});

t.test('unknown and string keys are ignored, as JSON ignores unknown properties', async (t) => {
  const cbor = encodeHeartbeat({ device_id: 'd', version_hash: hash });
  const withExtra = Buffer.concat([Buffer.from([cbor[0]! + 2]), cbor.subarray(1), Buffer.from([0x18, 99, 0x01, 0x61, 0x61, 0x02])]);
  t.same(heartbeatFields(withExtra), { device_id: 'd', version_hash: hash });
});

t.test('a manifest encodes with integer keys and decodes to the same values', async (t) => {
  const manifest: Manifest = {
    update_available: true, target_version: '2.0.0', target_hash: hash, target_size: 5_000_000_000, delta_size: 1234,
    delta_hash: 'cd'.repeat(32), chunk_size: 1024, total_chunks: 2, signature: 'ef'.repeat(64), delta_endpoint: `/delta/${hash}/${hash}`, artifact: 'app',
  };
  const cbor = encodeManifest(manifest);
  t.equal(cbor[1], 0x01, 'the first key is the integer 1');
  const decoded = decodeManifest(cbor);
  t.same(decoded, manifest, 'a size above 2^32 comes back as a number');
  t.ok(cbor.length < JSON.stringify(manifest).length);
});

t.test('hostile CBOR is MALFORMED_BODY without a large allocation', async (t) => {
  const cases: [string, Buffer][] = [
    ['huge array', Buffer.from([0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])],
    ['huge text', Buffer.from([0x7a, 0xff, 0xff, 0xff, 0xff, 0x61])],
    ['huge map', Buffer.from([0xbb, 0, 0, 0, 1, 0, 0, 0, 0])],
    ['deep arrays', Buffer.concat([Buffer.alloc(4000, 0x81), Buffer.from([0x01])])],
    ['four-level maps', Buffer.from([0xa1, 0x01, 0xa1, 0x01, 0xa1, 0x01, 0xa1, 0x01, 0x01])],
    ['trailing byte', Buffer.from([0xa0, 0x00])],
    ['empty', Buffer.alloc(0)],
  ];
  for (const [name, body] of cases) {
    t.throws(() => heartbeatFields(body), { code: 'MALFORMED_BODY' }, name);
  }
  t.throws(() => validateHeartbeat(reportFields(Buffer.from([0x01]))), { code: 'MALFORMED_BODY' }, 'a non-map is refused by the validator');
});

t.test('nesting is counted in keys, values, arrays and tags alike, up to three levels', async (t) => {
  const threeMaps = [0xa1, 0x01, 0xa1, 0x01, 0xa1, 0x01, 0x01];
  t.ok(decodeCbor(Buffer.from(threeMaps)) instanceof Map, 'three levels of maps pass');
  t.ok(decodeCbor(Buffer.from([0x81, 0x81, 0x81, 0x01])), 'three levels of arrays pass');
  t.ok(decodeCbor(Buffer.from([0xa2, 0x01, 0x01, 0x02, 0xa1, 0x01, 0x82, 0x01, 0x02])), 'a map beside scalars, two levels down, passes');
  const deep: [string, number[]][] = [
    ['a map as a key, three deep inside it', [0xa1, ...threeMaps, 0x01]],
    ['the fourth level in the second value', [0xa2, 0x01, 0x01, 0x02, ...threeMaps]],
    ['an array of three-level maps', [0x82, 0x01, ...threeMaps]],
    ['an unknown tag (an object once decoded) holding the fourth level', [0x81, 0x81, 0x81, 0xd9, 0x9c, 0x40, 0x81, 0x01]],
  ];
  for (const [name, bytes] of deep) t.throws(() => decodeCbor(Buffer.from(bytes)), { code: 'MALFORMED_BODY', message: /deeper than 3/ }, name);
});

t.test('a report round-trips through its integer keys', async (t) => {
  const report = { device_id: 'd-1', previous_hash: hash, new_hash: 'cd'.repeat(32), success: false, rollback_reason: 'health check failed', timestamp: 1_700_000_000 };
  const cbor = encodeReport(report);
  t.equal(cbor[1], 0x01, 'device_id is key 1');
  t.same(reportFields(cbor), report);
});

t.test('a manifest body that is not a map is MALFORMED_BODY', async (t) => {
  t.throws(() => decodeManifest(Buffer.from([0x01])), { code: 'MALFORMED_BODY' });
});

t.test('a manifest for CoAP carries a Block2 chunk size and the chunk count that follows from it', async (t) => {
  const manifest = { update_available: true, target_version: '2.0', target_hash: hash, target_size: 300_000, delta_size: 5_000, delta_hash: hash, chunk_size: 65_536, total_chunks: 1, artifact: 'app', delta_endpoint: '/delta/x/y', signature: 'ab'.repeat(64) } as Manifest;
  const coap = decodeManifest(encodeCoapManifest(manifest));
  t.same(coap, { ...manifest, chunk_size: 1024, total_chunks: 5 }, '64 KiB becomes 1024, 5,000 bytes five blocks; nothing else changes');
  const small = { ...manifest, chunk_size: 512, total_chunks: 10 };
  t.same(decodeManifest(encodeCoapManifest(small)), small, 'a chunk size that is already a Block2 size is left as it is');
  const bytes = encodeCoapManifest(manifest);
  t.equal(bytes.buffer.byteLength, bytes.byteLength, 'its own exactly sized buffer: it crosses threads without the encoder\'s');
});

t.test('attributes travel as a text-keyed map under key 7 and validate like their JSON twin', async (t) => {
  const json = { device_id: 'd-1', version_hash: hash, hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1, version: '1', attributes: { hw: 'B', tz: 'Europe/Berlin' } };
  const cbor = encodeHeartbeat(json);
  const fields = heartbeatFields(cbor) as Record<string, unknown>;
  t.ok(fields.attributes instanceof Map, 'the map stays a Map: no key of it reaches an object prototype');
  t.same(Object.entries(validateHeartbeat(fields).attributes!), [['hw', 'B'], ['tz', 'Europe/Berlin']]);
  t.same(validateHeartbeat(fields), validateHeartbeat(json));
  t.equal(cbor.toString('hex').includes('07a2626877614262747a6d4575726f70652f4265726c696e'), true, 'key 7, a two-entry map of text strings');
  const { attributes: _, ...plain } = json;
  t.notOk('attributes' in validateHeartbeat(heartbeatFields(encodeHeartbeat(plain))), 'absent stays absent');
  t.throws(() => validateHeartbeat({ ...json, attributes: [['hw', 'B']] }), { code: 'INVALID_FIELD', details: { field: 'attributes' } });
  const wrongKey = Buffer.concat([cbor.subarray(0, cbor.indexOf(Buffer.from('07a2', 'hex'))), Buffer.from('07a1016178', 'hex')]);
  t.throws(() => validateHeartbeat(heartbeatFields(wrongKey)), { code: 'INVALID_FIELD', details: { field: 'attributes' } }, 'an integer key inside the map');
});

import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import engine from 'updater-delta-engine';
import { needs } from '../helpers/system-tools.js';

// bsdiff-lzma patches written by hand from docs/protocol.md, "Patch formats", with the stock
// `xz` for the streams: the engine's decoder rebuilds what the text says they mean, and
// refuses what the text calls corrupt although every xz stream in it is sound: streams
// holding more than the triples use, a difference record running past the copy, an empty
// record, a copy running past the new file.

const OLD = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 'latin1');

function varint(value: number): number[] {
  const out: number[] = [];
  while (value >= 0x80) {
    out.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

/** An xz stream as the server writes it: preset 9e, 1 MiB dictionary, CRC32 (`dict` to ask for more). */
const xz = (bytes: number[] | Buffer, dict = '1MiB') => execFileSync('xz', ['-c', '--check=crc32', `--lzma2=preset=9e,dict=${dict}`], { input: Buffer.from(bytes) });

function patch(newSize: number, control: number[], diff: number[], extra: number[], extraDict?: string): Buffer {
  const streams = [xz(control), xz(diff), xz(extra, extraDict)];
  const header = Buffer.alloc(40);
  header.write('BSDLZMA1', 0, 'latin1');
  header.writeBigUInt64LE(BigInt(newSize), 8);
  streams.forEach((s, i) => header.writeBigUInt64LE(BigInt(s.length), 16 + 8 * i));
  return Buffer.concat([header, ...streams]);
}

t.test('hand-written patches: the meaning the text gives, and the corruption it names', needs('xz'), async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'updater-handmade-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'old'), OLD);
  const apply = async (bytes: Buffer): Promise<string> => {
    await writeFile(join(dir, 'patch'), bytes);
    try {
      engine.patch(join(dir, 'old'), join(dir, 'patch'), join(dir, 'new'));
      return (await readFile(join(dir, 'new'))).toString('latin1');
    } catch (err) {
      return (err as NodeJS.ErrnoException).code ?? 'no code';
    }
  };
  // A seek of +26 first; copy 10 from old[26..] ("0123456789") with 0x20 added to its third
  // byte ('2' + 0x20 = 'R'), then 3 extra bytes, a seek of -1; copy 3 from old[35..], two of
  // them past the old file's end, where old bytes count as 0 ('9' + 0x41 = 'z', 0x42, 0x43).
  const good = patch(16, [...varint(0), ...varint(0), ...varint(52), ...varint(10), ...varint(3), ...varint(1), ...varint(3), ...varint(0), ...varint(0)],
    [...varint(2), ...varint(1), 0x20, ...varint(7), ...varint(3), 0x41, 0x42, 0x43], [0x2d, 0x2d, 0x2d]);
  t.equal(await apply(good), '01R3456789---zBC', 'seek, copy with a difference, extra bytes, a copy past the old file\'s end');

  const corrupt: Array<[string, Buffer]> = [
    ['a spare extra byte', patch(13, [...varint(10), ...varint(3), ...varint(0)], [...varint(10), ...varint(0)], [1, 2, 3, 4])],
    ['a spare triple', patch(13, [...varint(10), ...varint(3), ...varint(0), ...varint(0), ...varint(0), ...varint(0)], [...varint(10), ...varint(0)], [1, 2, 3])],
    ['a record running past the copy', patch(13, [...varint(10), ...varint(3), ...varint(0)], [...varint(11), ...varint(0)], [1, 2, 3])],
    ['an empty record', patch(13, [...varint(10), ...varint(3), ...varint(0)], [...varint(0), ...varint(0), ...varint(10), ...varint(0)], [1, 2, 3])],
    ['a copy past the new file', patch(5, [...varint(10), ...varint(0), ...varint(0)], [...varint(10), ...varint(0)], [])],
    ['too few triples', patch(20, [...varint(10), ...varint(3), ...varint(0)], [...varint(10), ...varint(0)], [1, 2, 3])],
    ['a 64 MiB dictionary (a decoder may refuse more than 8 MiB)', patch(13, [...varint(10), ...varint(3), ...varint(0)], [...varint(10), ...varint(0)], [1, 2, 3], '64MiB')],
  ];
  // Each corrupt patch differs from one that applies in the one point it names.
  t.equal(await apply(patch(13, [...varint(10), ...varint(3), ...varint(0)], [...varint(10), ...varint(0)], [1, 2, 3])), 'ABCDEFGHIJ\x01\x02\x03', 'the sound patch the corrupt ones are made from');
  for (const [what, bytes] of corrupt) t.equal(await apply(bytes), 'DELTA_CORRUPT_PATCH', what);
});

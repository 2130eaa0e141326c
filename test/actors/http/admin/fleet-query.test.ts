import t from 'tap';
import { decodeCursor, encodeCursor, parseDeviceId, parseDeviceQuery } from '../../../../src/actors/http/admin/fleet-query.js';

// The fleet calls' query strings and path segments (docs/fleet.md, "Reading it"), checked
// before any database work.

const NOW = 1_800_000_000_000;

t.test('every next value the server hands out is read back as after', async (t) => {
  // A device id is up to 128 characters (UTF-16 units) of any printable text.
  for (const id of ['dev-1', 'x'.repeat(128), '端末'.repeat(64), '🛰'.repeat(64), `${'é'.repeat(127)}z`]) {
    const cursor = encodeCursor(id);
    t.equal(decodeCursor(cursor), id, `${id.slice(0, 4)}… (${id.length} units, cursor ${cursor.length} characters)`);
    t.equal(parseDeviceQuery(`limit=10&after=${cursor}`, NOW).after, id);
  }
});

t.test('a device id in the path or a cursor is checked like a heartbeat\'s device_id', async (t) => {
  // PostgreSQL's text cannot hold U+0000: such an id reached the database as an uncoded 500
  // there (SQLite answered 404). No device can have a control character in its id.
  for (const segment of ['%00', 'a%00b', 'a%0Ab', '%1B%5B31m', '%E2%80%A8']) {
    t.throws(() => parseDeviceId(segment), { code: 'INVALID_FIELD' }, segment);
  }
  t.equal(parseDeviceId('dev%2F1'), 'dev/1', 'any printable id is fine');
  t.equal(parseDeviceId('%E7%AB%AF%E6%9C%AB'), '端末');
  for (const id of ['a\u0000', '\u0000', 'a\nb']) {
    t.throws(() => decodeCursor(encodeCursor(id)), { code: 'INVALID_CURSOR' }, JSON.stringify(id));
  }
});

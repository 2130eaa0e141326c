import t from 'tap';
import { decodeCursor, encodeCursor, parseDeviceQuery } from '../../../../src/actors/http/admin/fleet-query.js';

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

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { ERRORS, UpdaterError, deserializeError, errorStatus, serializeError } from '../../src/shared/errors.js';
import { REPO_ROOT } from '../helpers/server.js';

t.test('the error table in docs/protocol.md matches the registry', async (t) => {
  const doc = await readFile(join(REPO_ROOT, 'docs', 'protocol.md'), 'utf8');
  const rows = new Map([...doc.matchAll(/^\| `([A-Z_]+)` \| (\d+) \| ([\d.]+) \|/gm)].map((m) => [m[1]!, { http: Number(m[2]), coap: m[3]! }]));
  t.same([...rows.keys()].sort(), Object.keys(ERRORS).sort(), 'every code is documented, and only those');
  for (const [code, spec] of Object.entries(ERRORS)) t.same(rows.get(code), { http: spec.http, coap: spec.coap }, code);
});

t.test('errors keep their code across a thread boundary', async (t) => {
  const original = new UpdaterError('DELTA_TOO_LARGE', 'too big', { size: 5 });
  const copy = deserializeError(structuredClone(serializeError(original)));
  t.equal(copy.code, 'DELTA_TOO_LARGE');
  t.equal(copy.message, 'too big');
  t.same(copy.details, { size: 5 });
  t.equal(serializeError(new Error('boom')).code, 'INTERNAL');
  t.equal(errorStatus(new Error('secret detail')).message, 'internal error', 'internal details stay out of answers');
  t.equal(errorStatus(original).http, 409);
});

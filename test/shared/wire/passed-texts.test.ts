import t from 'tap';
import { UpdaterError } from '../../../src/shared/errors.js';
import { PASSED_TEXTS, PassedTexts } from '../../../src/shared/wire/passed-texts.js';
import { validateHeartbeat } from '../../../src/shared/wire/validate.js';

// A heartbeat's track key and version hash are checked once per thread and then remembered
// (passed-texts.ts). What must hold: a text that did not pass is refused every time, however
// often a valid one was seen before it, and the memory stays bounded.

const goodHash = 'ab'.repeat(32);
const heartbeat = (fields: Record<string, unknown>) => ({
  device_id: 'dev-1', version_hash: goodHash, hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 1 }, timestamp: 1, version: '1', ...fields,
});

function outcome(fields: Record<string, unknown>): string {
  try {
    const h = validateHeartbeat(heartbeat(fields));
    return `accepted ${h.artifact} ${h.versionHash}`;
  } catch (err) {
    return err instanceof UpdaterError ? err.code : String(err);
  }
}

t.test('remembers only what it was given, and forgets all at once when full', async (t) => {
  const passed = new PassedTexts();
  passed.add('app');
  t.ok(passed.has('app'));
  t.notOk(passed.has('ap'), 'a prefix was not given');
  t.notOk(passed.has('app '), 'nor a longer text');
  t.notOk(passed.has(undefined));
  for (let i = 0; i < PASSED_TEXTS - 1; i++) passed.add(`track-${i}`);
  t.equal(passed.size, PASSED_TEXTS, 'full');
  passed.add('one more');
  t.equal(passed.size, 1, 'the next text made it forget the rest');
  t.ok(passed.has('one more'));
  t.notOk(passed.has('app'));
});

t.test('an invalid track key or hash is refused after the valid ones were remembered', async (t) => {
  const invalidTracks = ['app/linux', 'app//amd64', 'App/Linux/amd64', '..', 'a b', 'x'.repeat(201), 7];
  const invalidHashes = ['AB'.repeat(32), 'ab'.repeat(31), `${'ab'.repeat(32)}0`, 'zz'.repeat(32), 42, ''];
  // Several rounds: every valid text is remembered after the first.
  for (let round = 0; round < 3; round++) {
    t.equal(outcome({ artifact: 'app/linux/amd64' }), `accepted app/linux/amd64 ${goodHash}`, `round ${round}: a valid track`);
    t.equal(outcome({ artifact: 'app' }), `accepted app ${goodHash}`, `round ${round}: a name alone`);
    t.equal(outcome({}), `accepted  ${goodHash}`, `round ${round}: the default track`);
    for (const artifact of invalidTracks) t.equal(outcome({ artifact }), typeof artifact === 'string' && artifact.length <= 200 ? 'INVALID_ARTIFACT_KEY' : 'INVALID_FIELD', `round ${round}: track ${String(artifact).slice(0, 20)}`);
    for (const version_hash of invalidHashes) t.equal(outcome({ version_hash }), 'INVALID_HASH', `round ${round}: hash ${String(version_hash).slice(0, 20)}`);
  }
});

t.test('past the bound, tracks are checked again and still judged right', async (t) => {
  for (let i = 0; i < 2 * PASSED_TEXTS + 10; i++) t.equal(outcome({ artifact: `t${i}/linux/arm64` }), `accepted t${i}/linux/arm64 ${goodHash}`);
  t.equal(outcome({ artifact: 't1/linux' }), 'INVALID_ARTIFACT_KEY');
  t.equal(outcome({ artifact: 't1/linux/arm64' }), `accepted t1/linux/arm64 ${goodHash}`);
});

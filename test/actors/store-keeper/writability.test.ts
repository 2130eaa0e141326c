import t from 'tap';
import { Writability } from '../../../src/actors/store-keeper/writability.js';
import { UpdaterError } from '../../../src/shared/errors.js';
import { createLogger } from '../../../src/shared/logger.js';
import { makeFixture } from '../../helpers/fixture.js';

// The store's writable / full verdict when writes overlap, played on the class the store-keeper
// uses: a small write that began before a large one failed with ENOSPC ends after it. CI saw
// the race end to end (test/server/disk-full.test.ts: /health said "writable" right after a
// 507), and two overlapping writes are not something a test can time through the server.

const full = () => new UpdaterError('STORE_FULL', 'no space left');

t.test('a write begun before a failure for want of space does not undo "full" when it ends', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const writability = new Writability(fixture.dir, createLogger('test', 'silent'));
  const small = writability.writeStarted();
  writability.writeStarted(); // the large write, which then fails
  writability.failed(full());
  t.equal(writability.condition, 'full', 'the large write found the store full');
  writability.succeeded(small);
  t.equal(writability.condition, 'full', 'the small write that fitted meanwhile leaves it full');
  t.throws(() => writability.refuse('a publish'), { code: 'STORE_FULL' }, 'the next write is refused at once');
});

t.test('a write begun after the failure and fitting says the store takes writes again', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const writability = new Writability(fixture.dir, createLogger('test', 'silent'));
  writability.failed(full());
  const later = writability.writeStarted();
  writability.succeeded(later);
  t.equal(writability.condition, 'writable');
  t.equal(await writability.probe(), 'writable', 'and a probe of the real directory agrees');
});

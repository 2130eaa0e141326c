import t from 'tap';
import { TrustState } from '../../../../src/actors/fleet/identity/trust.js';

// The fleet actor's device trust: a reject or an admit made on this replica takes effect at once,
// and the periodic read of the database (changes from other replicas) never undoes one that the
// read began too early to see. A device-auth-cluster run showed it: replica a accepted a token
// more than a second after the reject made on replica a itself, once replica b already refused it.

type Sets = [Array<[string, number]>, string[]];

/** A read of the database whose answer the test hands over when it chooses. */
function pendingRead(): { read: () => Promise<Sets>; answer(sets: Sets): void } {
  let answer!: (sets: Sets) => void;
  const answered = new Promise<Sets>((resolve) => (answer = resolve));
  return { read: () => answered, answer };
}

const key = new Uint8Array(32);

t.test('a reject made while a read is under way is not undone by what the read found', async (t) => {
  const trust = new TrustState(key);
  const slow = pendingRead();
  const refreshed = trust.refresh(slow.read);
  trust.revoke('aa', 1000);
  slow.answer([[], []]); // read before the reject was written
  await refreshed;
  t.equal(trust.revokedAt('aa'), 1000, 'the revocation stands');
  t.ok(trust.snapshot().certificatesRefused.includes('aa'), 'and its certificate stays refused');
});

t.test('an admit made while a read is under way is not undone either', async (t) => {
  const trust = new TrustState(key);
  trust.revoke('bb', 1000);
  const slow = pendingRead();
  const refreshed = trust.refresh(slow.read);
  trust.admit('bb');
  slow.answer([[['bb', 1000]], ['bb']]);
  await refreshed;
  t.notOk(trust.snapshot().certificatesRefused.includes('bb'), 'the certificate is let in');
  t.equal(trust.revokedAt('bb'), 1000, 'the tokens from before stay revoked');
});

t.test('what the database says wins over changes made before the read began', async (t) => {
  const trust = new TrustState(key);
  trust.revoke('cc', 1000);
  await trust.refresh(async () => [[], []]); // pruned: expired
  t.equal(trust.revokedAt('cc'), undefined, 'a revocation gone from the database goes');
  t.same(trust.snapshot().certificatesRefused, []);
});

t.test('overlapping reads: each re-applies the changes made after it began, and none is kept longer', async (t) => {
  const trust = new TrustState(key);
  const first = pendingRead();
  const firstDone = trust.refresh(first.read);
  trust.revoke('dd', 1000);
  const second = pendingRead();
  const secondDone = trust.refresh(second.read);
  trust.revoke('ee', 1001);
  second.answer([[['dd', 1000]], ['dd']]);
  await secondDone;
  t.same([trust.revokedAt('dd'), trust.revokedAt('ee')], [1000, 1001], 'the later read keeps the reject it could not see');
  first.answer([[], []]);
  await firstDone;
  t.same([trust.revokedAt('dd'), trust.revokedAt('ee')], [1000, 1001], 'the earlier read keeps both');
  await trust.refresh(async () => [[], []]);
  t.same([trust.revokedAt('dd'), trust.revokedAt('ee')], [undefined, undefined], 'a read begun after both is authoritative');
});

t.test('a read that fails changes nothing and keeps nothing', async (t) => {
  const trust = new TrustState(key);
  const failing = trust.refresh(async () => {
    trust.revoke('ff', 1000);
    throw new Error('database away');
  });
  await t.rejects(failing, /database away/);
  t.equal(trust.revokedAt('ff'), 1000, 'the reject made meanwhile stands');
  await trust.refresh(async () => [[], []]);
  t.equal(trust.revokedAt('ff'), undefined, 'the next read, begun after it, is authoritative');
});

import t from 'tap';
import { bearerToken } from '../../../src/shared/bearer.js';
import { TokenChecker, deviceIdHash, mintDeviceToken } from '../../../src/shared/device-identity/token.js';
import { GENERATIONS, ROW_LIMIT, VerifiedTokens } from '../../../src/shared/device-identity/verified-tokens.js';
import { tokenRefusal } from '../../helpers/device-auth.js';

// The front-end's memory of verified tokens is a hand-made hash table of bytes: these check
// that it finds what it kept across growth and emptying, never answers for another token, and
// that the checker built on it refuses what it refused when it was a Map.

const KEY = new Uint8Array(32).map((_, i) => i * 5 + 3);
const NOW = 1_800_000_000;

function checkerWith(remembered: number): TokenChecker {
  const checker = new TokenChecker(remembered);
  checker.update({ version: '1', key: KEY, revoked: [], certificatesRefused: [] });
  return checker;
}

t.test('kept tokens are found across growth; past its limit the table keeps them until as many more overflowed', async (t) => {
  const memory = new VerifiedTokens(3000);
  const tokens = Array.from({ length: 3000 }, (_, n) => mintDeviceToken(KEY, `dev-${n}`, NOW + n, 3600));
  const idHash = Buffer.alloc(16, 1);
  const rows = tokens.map((token, n) => memory.add(token, 3, NOW + n, NOW + n + 3600, idHash));
  t.ok(memory.generation >= 2, `grew from 1,024 slots (generation ${memory.generation})`);
  const lost = tokens.filter((token, n) => memory.find(token, 3) < 0 || memory.issuedAt(memory.find(token, 3)) !== NOW + n);
  t.same(lost, [], 'every one of 3,000 tokens is found with its own issue time');
  t.equal(new Set(tokens.map((token) => memory.find(token, 3))).size, 3000, 'in 3,000 distinct rows');
  t.ok(rows.length === 3000 && memory.size === 3000, 'all kept');
  const stranger = mintDeviceToken(KEY, 'dev-x', NOW - 1, 3600);
  t.equal(memory.find(stranger, 3), -1, 'a token never kept is not found');
  t.equal(memory.find(tokens[5]!.slice(0, -1) + (tokens[5]!.endsWith('A') ? 'Q' : 'A'), 3), -1, 'nor one differing from a kept one in its last character');
  const generation = memory.generation;
  const overflowRow = memory.add(stranger, 3, NOW - 1, NOW + 1, idHash);
  t.equal(memory.size, 3000, 'one past the limit, the table keeps what it holds');
  t.equal(memory.issuedAt(overflowRow), NOW - 1, 'the token past it is held in a row of its own, for its request');
  t.equal(memory.find(stranger, 3), -1, 'where no lookup finds it (it is verified afresh next time)');
  t.equal(memory.generation, generation + 1, 'and a pass to that row is known stale once another token overflows');
  t.ok(tokens.every((token) => memory.find(token, 3) >= 0), 'the 3,000 kept are all still found');
  for (let n = 1; n < 3000; n++) memory.add(mintDeviceToken(KEY, `dev-over-${n}`, NOW, 3600), 3, NOW, NOW + 1, idHash);
  t.equal(memory.size, 3000, 'after as many tokens past the limit as it holds, it still holds its own');
  memory.add(mintDeviceToken(KEY, 'dev-last', NOW, 3600), 3, NOW, NOW + 1, idHash);
  t.equal(memory.size, 1, 'the next one empties it (what it kept is mostly gone by then), and it starts again with that token');
  t.equal(memory.find(tokens[0]!, 3), -1, 'the tokens before are no longer found (each is verified afresh)');
});

t.test('past the memory: a forged token is refused, and a pass to the overflow row does not vouch for the next token held there', async (t) => {
  const checker = checkerWith(3);
  for (const id of ['dev-a', 'dev-b', 'dev-c']) checker.requireOwner(checker.verify(mintDeviceToken(KEY, id, NOW, 3600), NOW + 1), id); // fill the memory
  const genuine = mintDeviceToken(KEY, 'dev-attacker', NOW, 3600);
  const flipped = genuine.slice(0, -2) + (genuine.at(-2) === 'A' ? 'B' : 'A') + genuine.at(-1);
  t.equal(tokenRefusal(() => checker.verify(flipped, NOW + 1)), 'invalid', 'a token with one character changed is refused past the memory too');
  // The attacker's own token is held in the overflow row for its request; the victim's, checked next, is held there after it.
  const attackerPass = checker.verify(genuine, NOW + 1);
  const victimPass = checker.verify(mintDeviceToken(KEY, 'dev-victim', NOW, 3600), NOW + 1);
  t.equal(attackerPass % ROW_LIMIT, victimPass % ROW_LIMIT, 'both in the same overflow row');
  t.equal(tokenRefusal(() => checker.requireOwner(victimPass, 'dev-victim')), undefined, "the victim's pass is good for the victim");
  t.equal(tokenRefusal(() => checker.requireOwner(attackerPass, 'dev-victim')), 'invalid', "the attacker's earlier pass is not taken for the victim, whose token the row now holds");
});

t.test('the generation counts round before a pass stops being an exact integer', async (t) => {
  t.equal((GENERATIONS - 1) * ROW_LIMIT + (ROW_LIMIT - 1), Number.MAX_SAFE_INTEGER, 'the largest pass is the largest exact integer');
  const checker = checkerWith(1);
  // Every token past the first overflows and takes a generation; start near the end of the count.
  (checker as unknown as { memory: VerifiedTokens }).memory.generation = GENERATIONS - 2;
  const wrong: string[] = [];
  for (let n = 0; n < 5; n++) {
    const token = mintDeviceToken(KEY, `dev-${n}`, NOW, 3600);
    const pass = checker.verify(token, NOW + 1);
    if (!Number.isSafeInteger(pass)) wrong.push(`pass ${n} is not an exact integer`);
    if (tokenRefusal(() => checker.requireOwner(pass, `dev-${n}`)) !== undefined) wrong.push(`dev-${n} refused`);
    if (tokenRefusal(() => checker.requireOwner(pass, `dev-${n + 1}`)) !== 'mismatch') wrong.push(`dev-${n} taken for dev-${n + 1}`);
  }
  t.same(wrong, [], 'across the wrap, each pass names its own token');
  t.ok((checker as unknown as { memory: VerifiedTokens }).memory.generation < 5, 'and the count started again from 0');
});

t.test('a fleet a little larger than the memory, checking in in turn, keeps most tokens remembered', async (t) => {
  // How a front-end uses it (TokenChecker.verifyAt): a lookup, and on a miss the token verified and added.
  const memory = new VerifiedTokens(1000);
  const idHash = Buffer.alloc(16, 1);
  const fleet = Array.from({ length: 1100 }, (_, n) => mintDeviceToken(KEY, `dev-${n}`, NOW, 3600));
  const foundPerPass: number[] = [];
  for (let pass = 0; pass < 5; pass++) {
    let found = 0;
    for (const token of fleet) {
      if (memory.find(token, 3) >= 0) found++;
      else memory.add(token, 3, NOW, NOW + 3600, idHash);
    }
    foundPerPass.push(found);
  }
  // Emptied at the first token past the limit, it forgot each token just before its device came back: none found.
  t.same(foundPerPass, [0, 1000, 1000, 1000, 1000], '1,100 devices through a memory of 1,000: the first 1,000 found on every later pass');
});

t.test('a checker past its memory still checks every token, and refuses forgeries among them', async (t) => {
  const checker = checkerWith(500);
  const tokens = Array.from({ length: 1200 }, (_, n) => [`dev-${n}`, mintDeviceToken(KEY, `dev-${n}`, NOW, 3600)] as const);
  const wrong: string[] = [];
  for (let round = 0; round < 2; round++) {
    for (const [id, token] of tokens) {
      if (tokenRefusal(() => checker.requireOwner(checker.verify(token, NOW + 1), id)) !== undefined) wrong.push(`${id} refused`);
      if (tokenRefusal(() => checker.requireOwner(checker.verify(token, NOW + 1), `${id}-other`)) !== 'mismatch') wrong.push(`${id} under another id`);
    }
  }
  t.same(wrong, [], '2 × 1,200 tokens through a memory of 500: each valid for its device, refused for another');
});

t.test('a pass from before the memory changed is refused, even when its row now holds the token of the device it names', async (t) => {
  const checker = checkerWith(1);
  const passA = checker.verify(mintDeviceToken(KEY, 'dev-A', NOW, 3600), NOW + 1);
  const rowA = passA % ROW_LIMIT;
  // With a memory of one token, each new token empties it: find a token of dev-B that lands in A's row.
  let passB = -1;
  for (let issued = NOW; passB % ROW_LIMIT !== rowA; issued++) passB = checker.verify(mintDeviceToken(KEY, 'dev-B', issued, 3600), NOW + 1);
  t.equal(tokenRefusal(() => checker.requireOwner(passB, 'dev-B')), undefined, "B's own pass is good for B");
  t.equal(tokenRefusal(() => checker.requireOwner(passA, 'dev-B')), 'invalid', "A's stale pass is not taken for B's, though the row now holds B's token");
  t.equal(tokenRefusal(() => checker.requireOwner(passA, 'dev-A')), 'invalid', 'nor for A');
});

t.test('device ids kept in the row (Latin-1, up to 40 characters) and those compared by hash every time (longer, or beyond Latin-1)', async (t) => {
  const checker = checkerWith(100);
  for (const id of ['x'.repeat(40), 'x'.repeat(41), 'y'.repeat(128), 'pompe-à-chaleur', 'capteur-🔥-12', 'Ünïcødé-ÿ']) {
    const token = mintDeviceToken(KEY, id, NOW, 3600);
    const results = [id, id, `${id}?`, id, id.slice(0, -1), id].map((asked) => tokenRefusal(() => checker.requireOwner(checker.verify(token, NOW + 1), asked)));
    t.same(results, [undefined, undefined, 'mismatch', undefined, 'mismatch', undefined], `${id.length} characters: ${id.slice(0, 16)}`);
  }
});

t.test('a revocation lifted lets the token in again; one added later refuses a remembered token', async (t) => {
  const checker = checkerWith(100);
  const token = mintDeviceToken(KEY, 'dev-1', NOW, 3600);
  checker.requireOwner(checker.verify(token, NOW + 1), 'dev-1');
  const trust = (version: string, revoked: [string, number][]) => ({ version, key: KEY, revoked, certificatesRefused: [] });
  checker.update(trust('2', [[deviceIdHash('dev-2'), NOW + 5]]));
  t.equal(tokenRefusal(() => checker.verify(token, NOW + 2)), undefined, "another device's revocation: valid");
  checker.update(trust('3', [[deviceIdHash('dev-2'), NOW + 5], [deviceIdHash('dev-1'), NOW]]));
  t.equal(tokenRefusal(() => checker.verify(token, NOW + 2)), 'revoked', 'its own, at its issue time: revoked');
  checker.update(trust('4', [[deviceIdHash('dev-1'), NOW - 1]]));
  t.equal(tokenRefusal(() => checker.verify(token, NOW + 2)), undefined, 'revoked only before its issue time: valid');
});

t.test('bearerToken reads the header as the pattern /^Bearer[ \\t]+(\\S+)[ \\t]*$/i does', async (t) => {
  t.equal(bearerToken('Bearer d1.abc'), 'd1.abc');
  t.equal(bearerToken('bEaReR \t d1.abc \t'), 'd1.abc', 'any case, spaces and tabs around');
  for (const header of ['', 'Bearer', 'Bearer ', 'Bearerd1.abc', 'Basic d1.abc', 'Bearer a b', 'Bearer a\r', ' Bearer a', 'Bearer\u00a0a', 'Bearer a\u00a0']) {
    t.equal(bearerToken(header), undefined, JSON.stringify(header));
  }
  // Every header of up to 6 characters over an alphabet with each edge, after "Bearer" in some case.
  const pattern = /^Bearer[ \t]+(\S+)[ \t]*$/i;
  const alphabet = ['a', 'B', ' ', '\t', '\r', '\u00a0', '-'];
  const differ: string[] = [];
  const visit = (tail: string): void => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'Bearex']) {
      const header = scheme + tail;
      if (bearerToken(header) !== pattern.exec(header)?.[1]) differ.push(JSON.stringify(header));
    }
    if (tail.length < 5) for (const c of alphabet) visit(tail + c);
  };
  visit('');
  t.same(differ, [], 'the hand scan and the pattern agree on 4 × 19,608 headers');
});

t.test('verifyBearer takes the token as bearerToken reads it, in place or not', async (t) => {
  const checker = checkerWith(100);
  const token = mintDeviceToken(KEY, 'dev-1', NOW, 3600);
  for (const header of [`Bearer ${token}`, `bearer ${token}`, `Bearer \t${token} `, `BEARER\t${token}`]) {
    t.equal(tokenRefusal(() => checker.requireOwner(checker.verifyBearer(header, NOW + 1), 'dev-1')), undefined, JSON.stringify(header.slice(0, 10)));
  }
  const other = mintDeviceToken(KEY, 'dev-2', NOW, 3600);
  t.equal(tokenRefusal(() => checker.requireOwner(checker.verifyBearer(`Bearer ${other}`, NOW + 1), 'dev-1')), 'mismatch', "read in place, another device's token: mismatch");
  t.equal(tokenRefusal(() => checker.verifyBearer(`Bearer ${token.slice(0, 20)} ${token.slice(21)}`, NOW + 1)), 'invalid', 'a space inside a header of the exact length: invalid');
  t.equal(tokenRefusal(() => checker.verifyBearer(`Bearer ${token.slice(0, -1)}`, NOW + 1)), 'invalid', 'a character short: invalid');
  t.equal(tokenRefusal(() => checker.verifyBearer(`Bearer ${token}x`, NOW + 1)), 'invalid', 'a character long: invalid');
  t.equal(tokenRefusal(() => checker.verifyBearer(`Basic ${token}x`, NOW + 1)), 'missing', 'another scheme: missing');
  t.equal(tokenRefusal(() => checker.verifyBearer('', NOW + 1)), 'missing', 'no header: missing');
  t.equal(tokenRefusal(() => checker.verifyBearer(`Bearer ${token}`, NOW + 3600)), 'expired', 'read in place, at its expiry: expired');
});

import { setImmediate as nextTurn } from 'node:timers/promises';
import t from 'tap';
import type { HttpResponse } from 'uWebSockets.js';
import { exchange, sendError } from '../../../../src/actors/http/server/respond.js';
import { answerAtTurnEnd, writeHeldAnswers } from '../../../../src/actors/http/server/turn-end-answers.js';
import { UpdaterError } from '../../../../src/shared/errors.js';

/** A uWS response that records what is written to it, into one log shared by all of them. */
function recordingResponse(name: string, log: string[]) {
  let abort: (() => void) | undefined;
  const res = {
    onAborted(handler: () => void) { abort = handler; return res; },
    cork(fn: () => void) { fn(); return res; },
    writeStatus(status: string) { log.push(`${name} status ${status}`); return res; },
    writeHeader(header: string, value: string) { log.push(`${name} ${header}: ${value}`); return res; },
    end(body: string) { log.push(`${name} end ${body}`); return res; },
  };
  return { res: res as unknown as HttpResponse, abort: () => abort?.() };
}

t.test('the answers of one turn are written after it, in order, each followed by its own callback', async (t) => {
  const log: string[] = [];
  const exchanges = ['a', 'b', 'c'].map((name) => ({ name, ex: exchange(recordingResponse(name, log).res) }));
  for (const { name, ex } of exchanges) answerAtTurnEnd({ ex, body: `{"device":"${name}"}`, answered: () => log.push(`${name} then`) });
  t.same(log, [], 'nothing is written within the turn');
  t.ok(exchanges.every(({ ex }) => ex.done), 'each exchange counts as answered at once');
  await nextTurn();
  t.same(log, ['a', 'b', 'c'].flatMap((name) => [`${name} status 200 OK`, `${name} Content-Type: application/json`, `${name} end {"device":"${name}"}`, `${name} then`]));
  t.same(exchanges.map(({ ex }) => ex.status), [200, 200, 200], 'the status is there for the request metrics');
});

t.test('a client gone before the turn ends gets nothing written, and its callback still runs', async (t) => {
  const log: string[] = [];
  const gone = recordingResponse('gone', log);
  const ex = exchange(gone.res);
  let called = 0;
  answerAtTurnEnd({ ex, body: '{}', answered: () => called++ });
  gone.abort();
  await nextTurn();
  t.same(log, [], 'no write to an aborted response');
  t.equal(ex.status, undefined, 'no status: the metrics count it as 499');
  t.equal(called, 1);
});

t.test('an exchange is answered once: nothing is written after a held answer, nor a held answer after another', async (t) => {
  const log: string[] = [];
  const held = exchange(recordingResponse('held', log).res);
  answerAtTurnEnd({ ex: held, body: '{"first":true}', answered: () => undefined });
  sendError(held, new UpdaterError('MALFORMED_BODY')); // what a later failure of the route would do
  const answered = exchange(recordingResponse('answered', log).res);
  sendError(answered, new UpdaterError('MALFORMED_BODY'));
  let called = 0;
  answerAtTurnEnd({ ex: answered, body: '{"second":true}', answered: () => called++ });
  t.equal(called, 1, 'the callback runs at once for an exchange already answered');
  await nextTurn();
  const ends = log.filter((line) => line.includes(' end '));
  t.equal(ends.length, 2, 'one body for each exchange');
  t.match(ends[0], /^answered end .*MALFORMED_BODY/, 'the answer written first stays the only one');
  t.equal(ends[1], 'held end {"first":true}', 'the held answer is written, and the later failure is not');
});

t.test('a drain writes the held answers at once, and the end of the turn writes nothing more', async (t) => {
  const log: string[] = [];
  const ex = exchange(recordingResponse('held', log).res);
  let called = 0;
  answerAtTurnEnd({ ex, body: '{}', answered: () => called++ });
  writeHeldAnswers(); // what the HTTP actor's drain does before it closes the connections
  t.same(log, ['held status 200 OK', 'held Content-Type: application/json', 'held end {}'], 'written before the drain closes the connections');
  t.equal(called, 1, 'and handed on (the inventory), before the drain flushes the feed');
  await nextTurn();
  t.equal(log.length, 3, 'not written twice');
  t.equal(called, 1);
});

import { writeAnswer, type Exchange } from './respond.js';

// Answers held until the end of the event loop's turn, then written one after another.
//
// In one turn uWS dispatches every request whose bytes arrived together (on a busy server,
// tens of connections). Written at once, each answer is its own send while the client waits
// asleep for it, so every send also pays the kernel's wake-up of that client, on this
// thread: on loopback that was 2.7 µs of a heartbeat's 43 µs, against 0.9 µs for the bare
// uWS handler whose client never sleeps (perf, bench/results/2026-11-29-answers-at-turn-end.md).
// Written together after the turn, the first send wakes the client and the rest find it
// awake. An answer waits at most for the requests dispatched beside it, a few milliseconds
// when the server is saturated; on a quiet one a turn holds one request and nothing waits.

/**
 * Each answer's bytes, by its text: the heartbeats of a fleet share a few answers (the decision
 * snapshot's, the same string object each time, so a lookup compares no characters), and uWS
 * reads bytes in place where it copies a string to UTF-8 on every write (respond.ts). Bounded:
 * emptied when full, as snapshots replace the answers.
 */
const answerBytes = new Map<string, Buffer>();
const MAX_ANSWER_BYTES_ENTRIES = 64;

function bytesOf(body: string): Buffer {
  let bytes = answerBytes.get(body);
  if (bytes === undefined) {
    if (answerBytes.size >= MAX_ANSWER_BYTES_ENTRIES) answerBytes.clear();
    bytes = Buffer.from(body);
    answerBytes.set(body, bytes);
  }
  return bytes;
}

/** An answer held for the turn's end: a 200 with a JSON body. */
export interface HeldAnswer {
  readonly ex: Exchange;
  /** The JSON body. */
  readonly body: string;
  /** Called once the answer is written, also when the client went away meanwhile (the answer was given); must not throw. */
  answered(): void;
}

let held: HeldAnswer[] = [];
let scheduled = false;

/**
 * Writes every held answer now. The turn's end does; so does a drain before it closes the
 * connections, which would otherwise take the answers of the turn under way with them.
 */
export function writeHeldAnswers(): void {
  scheduled = false;
  const answers = held;
  held = [];
  for (const answer of answers) {
    if (!answer.ex.aborted) writeAnswer(answer.ex, 200, bytesOf(answer.body));
    answer.answered();
  }
}

/**
 * Answers `answer.ex` with 200 and `answer.body` once this turn's requests have all been
 * dispatched, then calls `answer.answered()`. The exchange counts as answered from now on, so
 * nothing else writes to it.
 */
export function answerAtTurnEnd(answer: HeldAnswer): void {
  const ex = answer.ex;
  if (ex.aborted || ex.done) {
    answer.answered();
    return;
  }
  ex.done = true;
  held.push(answer);
  if (!scheduled) {
    scheduled = true;
    setImmediate(writeHeldAnswers);
  }
}

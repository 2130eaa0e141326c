import t from 'tap';
import { summarizeProfile } from '../../bench/profile.js';

// A profile of a fleet thread: root → flush → run (the SQLite write); root → (idle); and a
// pool worker's wait. Samples 1 ms apart from t = 1,000,000 µs.
const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0 });
const profile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 4, 5, 7] },
    { id: 2, callFrame: frame('flushOnce', 'file:///srv/dist/src/actors/fleet/index.js'), children: [3] },
    { id: 3, callFrame: frame('sqliteTransaction', 'file:///srv/node_modules/better-sqlite3/lib/methods/transaction.js') },
    { id: 4, callFrame: frame('(idle)') },
    { id: 5, callFrame: frame('atomicsWaitLoop', 'file:///srv/node_modules/piscina/dist/worker.js'), children: [6] },
    { id: 6, callFrame: frame('wait') },
    { id: 7, callFrame: frame('(garbage collector)') },
  ],
  // flush self, sqlite ×3, idle ×2, wait ×2, gc, sqlite (outside the window below)
  samples: [2, 3, 3, 3, 4, 4, 6, 6, 7, 3],
  timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
  startTime: 1_000_000,
  endTime: 1_010_000,
};

t.test('busy time leaves out idle samples and a worker blocked in Atomics.wait; the thread is named by its actor', async (t) => {
  const p = summarizeProfile('x.cpuprofile', profile);
  t.equal(p.role, 'fleet');
  t.equal(p.wallSeconds, 0.01);
  t.equal(Number(p.busySeconds.toFixed(3)), 0.006, '10 samples of 1 ms, 2 idle and 2 waiting');
  t.equal(Number(p.self.get('sqliteTransaction better-sqlite3:1')!.toFixed(3)), 0.004);
  t.equal(Number(p.total.get('flushOnce src/actors/fleet/index.js:1')!.toFixed(3)), 0.005, 'its own sample and its callee\'s');
  t.equal(Number(p.places.get('better-sqlite3')!.toFixed(3)), 0.004);
});

t.test('given windows, only the samples inside them count', async (t) => {
  // Samples end at 1,001,000 … 1,010,000: the window [1,001,500, 1,009,500) holds samples 2 to 9.
  const p = summarizeProfile('x.cpuprofile', profile, [[1_001_500, 1_009_500]]);
  t.equal(Number(p.wallSeconds.toFixed(3)), 0.008);
  t.equal(Number(p.busySeconds.toFixed(3)), 0.004, 'three SQLite samples and the collector');
  t.equal(p.self.get('flushOnce src/actors/fleet/index.js:1'), undefined, 'the first sample is before the window');
});

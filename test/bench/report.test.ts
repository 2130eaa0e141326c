import t from 'tap';
import { median, ratioRows, summaryTable, verdict } from '../../bench/report.js';
import { perRoundRatios, roundOrder, roundRatioRow } from '../../bench/rounds.js';
import { parseWrkOutput } from '../../bench/wrk.js';

// The benchmark's own arithmetic: a wrong parse or verdict would print a PASS nobody earned.

const WRK_OUTPUT = `Running 6s test @ http://127.0.0.1:40000/heartbeat
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     5.02ms    9.81ms 132.29ms   96.01%
    Req/Sec    13.11k     1.02k   14.50k    80.00%
  Latency Distribution
     50%    3.64ms
     75%    4.10ms
     90%    6.02ms
     99%  132.29ms
  78300 requests in 6.00s, 52.17MB read
  Non-2xx or 3xx responses: 12
  Socket errors: connect 0, read 3, write 0, timeout 1
Requests/sec:  13050.12
Transfer/sec:      8.69MB
`;

t.test('reads throughput, latency percentiles and every kind of failed request from wrk', async (t) => {
  const result = parseWrkOutput(WRK_OUTPUT);
  t.equal(result.requestsPerSecond, 13050.12);
  t.equal(result.requests, 78300);
  t.equal(result.latencyP50Ms, 3.64);
  t.equal(result.latencyP99Ms, 132.29);
  t.equal(result.errors, 16, 'non-2xx answers and socket errors both count');
});

t.test('converts microsecond latencies and reports a clean run as error-free', async (t) => {
  const clean = WRK_OUTPUT.replace('     50%    3.64ms', '     50%  830.00us').replace(/ {2}Non-2xx.*\n {2}Socket errors.*\n/, '');
  const result = parseWrkOutput(clean);
  t.equal(result.latencyP50Ms, 0.83);
  t.equal(result.errors, 0);
});

t.test('refuses wrk output it cannot read instead of reporting zero', async (t) => {
  t.throws(() => parseWrkOutput('unable to connect to 127.0.0.1:1 Connection refused'));
});

t.test('a ratio passes only on the right side of its goal', async (t) => {
  t.equal(verdict({ name: 'rps', value: 0.5, goal: { min: 0.5 } }), 'PASS');
  t.equal(verdict({ name: 'rps', value: 0.49, goal: { min: 0.5 } }), 'MISS');
  t.equal(verdict({ name: 'time', value: 1.21, goal: { max: 1.2 } }), 'MISS');
  t.equal(verdict({ name: 'time', value: Number.NaN, goal: { max: 1.2 } }), 'MISS', 'an unmeasured figure never passes');
  t.equal(verdict({ name: 'size', value: 0.03 }), 'info');
});

t.test('a foreign suite record joins the summary by its ratios, or by keys that name a ratio', async (t) => {
  const declared = ratioRows('coap', { ratios: [{ name: 'vs bare', value: 0.9, goal: { min: 0.8 } }], rps: 100 });
  t.same(declared, [{ name: 'coap: vs bare', value: 0.9, goal: { min: 0.8 } }]);
  const inferred = ratioRows('agent', { peak_to_target_ratio: 1.5, peak_mb: 30, label: 'ratio' });
  t.same(inferred, [{ name: 'agent: peak_to_target_ratio', value: 1.5 }]);
  t.match(summaryTable([...declared, ...inferred]), /coap: vs bare\s+0\.900\s+-\s+>= 0\.8\s+PASS/);
});

t.test('the median of an even count averages the middle two', async (t) => {
  t.equal(median([3, 1, 2]), 2);
  t.equal(median([4, 1, 3, 2]), 2.5);
  t.ok(Number.isNaN(median([])));
});

t.test('ratios are taken per round, then summarized as min, median and max', async (t) => {
  // A ratio of medians would say 100 / 100 = 1.0; the rounds say the server was behind in two of three.
  const server = [100, 60, 120];
  const bare = [200, 100, 100];
  const ratios = perRoundRatios(server, bare);
  t.same(ratios.perRound, [0.5, 0.6, 1.2]);
  t.equal(ratios.min, 0.5);
  t.equal(ratios.median, 0.6);
  t.equal(ratios.max, 1.2);
  t.throws(() => perRoundRatios([1, 2], [1]), /paired rounds/, 'unpaired rounds are refused');
  t.throws(() => perRoundRatios([], []), /paired rounds/);
  const row = roundRatioRow('req/s, server / bare', server, bare, { goal: { min: 0.5 } });
  t.same(row.rounds, { min: 0.5, max: 1.2, count: 3 });
  t.equal(verdict(row), 'PASS', 'the verdict is on the median per-round ratio');
  t.match(summaryTable([row]), /req\/s, server \/ bare\s+0\.600\s+0\.500 \.\. 1\.200 \(3\)\s+>= 0\.5\s+PASS/);
  t.same([0, 1, 2, 3].map((r) => roundOrder(['a', 'b'], r).join('')), ['ab', 'ba', 'ab', 'ba'], 'every other round reversed');
});

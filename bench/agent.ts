import { performance } from 'node:perf_hooks';
import { makeDevice, runAgentOnce, type AgentRun } from '../test/helpers/agent.js';
import { firmware, makeFixture, nextVersion, sha256Hex } from '../test/helpers/fixture.js';
import { heartbeatUntilSigned } from '../test/helpers/http.js';
import { startTestServer } from '../test/helpers/server.js';

// The device agent's peak memory while it applies an update, against the target size.
// The agent runs as its own process (`updater agent --once`) and logs its own peak RSS
// (process.resourceUsage().maxRSS) at the end of the cycle; the server runs in this process.
// Expected: delta mode about source + target (bspatch holds both), full mode about one
// 8 MiB zstd frame plus the Node baseline, whatever the target size.

const TARGET_BYTES = Number(process.env.AGENT_BENCH_TARGET_MB ?? 24) * 1024 * 1024;
const MB = 1024 * 1024;

function peakRssMb(run: AgentRun): number {
  const line = run.lines.find((l) => l.msg === 'cycle finished');
  if (!line || run.code !== 0) throw new Error(`agent cycle failed:\n${run.output.slice(-2000)}`);
  return Math.round((line.maxRssKb / 1024) * 10) / 10;
}

export async function runAgentBench(): Promise<Record<string, unknown>> {
  const fixture = await makeFixture('updater-agent-bench-');
  try {
    const v1Bytes = firmware(TARGET_BYTES, 'bench-v1');
    const v2Bytes = nextVersion(v1Bytes, 'bench-v2');
    const strangerBytes = firmware(1024 * 1024, 'bench-stranger');
    const v1 = await fixture.writeBinary('v1.bin', v1Bytes);
    const v2 = await fixture.writeBinary('v2.bin', v2Bytes);
    const server = await startTestServer(fixture, [
      { name: 'app', version: '2.0.0', binary: v2.path },
      { name: 'legacy', version: '1.0.0', binary: v1.path },
    ], { default_artifact: 'app', allow_full_download: true, log_level: 'error' });
    try {
      const delta = await heartbeatUntilSigned(server.url, v1.hash, 'app', 300_000);
      const full = await heartbeatUntilSigned(server.url, sha256Hex(strangerBytes), 'app', 300_000);

      const idleDevice = await makeDevice(fixture, server.url, v2Bytes);
      const idle = peakRssMb(await runAgentOnce(idleDevice.configPath));

      const deltaDevice = await makeDevice(fixture, server.url, v1Bytes);
      let started = performance.now();
      const deltaPeak = peakRssMb(await runAgentOnce(deltaDevice.configPath, undefined, 300_000));
      const deltaSeconds = (performance.now() - started) / 1000;
      if ((await deltaDevice.current()).hash !== v2.hash) throw new Error('the delta device did not reach v2');

      const fullDevice = await makeDevice(fixture, server.url, strangerBytes);
      started = performance.now();
      const fullPeak = peakRssMb(await runAgentOnce(fullDevice.configPath, undefined, 300_000));
      const fullSeconds = (performance.now() - started) / 1000;
      if ((await fullDevice.current()).hash !== v2.hash) throw new Error('the full-mode device did not reach v2');

      const targetMb = Math.round((v2Bytes.length / MB) * 10) / 10;
      return {
        agent_target_mb: targetMb,
        agent_delta_transfer_bytes: delta.delta_size,
        agent_full_transfer_mb: Math.round((full.delta_size / MB) * 10) / 10,
        agent_idle_cycle_peak_rss_mb: idle,
        agent_delta_apply_peak_rss_mb: deltaPeak,
        agent_delta_apply_rss_per_target_mb: Math.round(((deltaPeak - idle) / targetMb) * 100) / 100,
        agent_delta_cycle_seconds: Math.round(deltaSeconds * 100) / 100,
        agent_full_apply_peak_rss_mb: fullPeak,
        agent_full_cycle_seconds: Math.round(fullSeconds * 100) / 100,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await fixture.cleanup();
  }
}

// `node dist/bench/agent.js` runs this benchmark alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  runAgentBench().then((result) => console.log(JSON.stringify(result, null, 2)), (err) => {
    console.error(err);
    process.exitCode = 1;
  });
}

import { spawn } from 'node:child_process';

/** A restart that hangs is a failed restart; ten minutes covers a slow service stop. */
const RESTART_TIMEOUT_MS = 10 * 60_000;

export interface RestartResult {
  ok: boolean;
  /** Exit code, or the signal name when the command was killed. */
  status: string;
  stderrTail: string;
}

/** Runs restart_command through /bin/sh; its stdout is dropped so agent logs stay JSON lines. */
export function runRestartCommand(command: string): Promise<RestartResult> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-2000);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), RESTART_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ ok: false, status: err.message, stderrTail: stderr });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, status: signal ?? String(code), stderrTail: stderr });
    });
  });
}

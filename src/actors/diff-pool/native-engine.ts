import { spawn } from 'node:child_process';
import engine from 'updater-delta-engine';
import type { DeltaFormat } from '../../shared/delta-formats.js';
import { UpdaterError } from '../../shared/errors.js';

// The native delta engine (native/delta: libdivsufsort suffix array, BSDIFF40 or bsdiff-lzma
// output) runs as a program in a child process: a crash or an out-of-memory kill of native
// code ends the child and fails this one generation, never the server. The program writes
// the patch and then applies it, streamed, comparing every rebuilt byte with the target
// before it exits 0.

export interface EngineReport {
  readonly patchBytes: number;
  readonly controls: number;
  readonly sortSeconds: number;
  readonly scanSeconds: number;
  readonly diffSeconds: number;
  readonly verifySeconds: number;
}

/** Longest stderr kept for the error message; the program prints one short JSON line. */
const MAX_STDERR = 4096;

/** Runs `program diff` (the engine's program unless a test hands another) for a patch of `format` (bsdiff40 unless given). */
export function nativeDiff(sourcePath: string, targetPath: string, patchPath: string, program = engine.programPath, format?: DeltaFormat): Promise<EngineReport> {
  return new Promise((resolve, reject) => {
    const args = ['diff', sourcePath, targetPath, patchPath, ...(format && format !== 'bsdiff40' ? [format] : [])];
    // The program ends itself when this process dies (native/delta/src/cli.cpp, endWithParent).
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, UPDATER_DELTA_PARENT: String(process.pid) } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      if (stderr.length < MAX_STDERR) stderr += text;
    });
    child.once('error', (err) => reject(new UpdaterError('DIFF_FAILED', `the delta engine could not start: ${err.message}`)));
    child.once('close', (code, signal) => {
      if (code === 0) {
        try {
          resolve(JSON.parse(stdout) as EngineReport);
        } catch {
          reject(new UpdaterError('DIFF_FAILED', `the delta engine printed no report: ${stdout.slice(0, 200)}`));
        }
        return;
      }
      reject(engineFailure(code, signal, stderr));
    });
  });
}

function engineFailure(code: number | null, signal: NodeJS.Signals | null, stderr: string): UpdaterError {
  if (signal) {
    return new UpdaterError('DIFF_FAILED', `the delta engine was ended by ${signal}`, { signal });
  }
  let reported: { code?: string; message?: string } = {};
  try {
    reported = JSON.parse(stderr.trim().split('\n').pop() ?? '{}') as typeof reported;
  } catch {
    reported = { message: stderr.trim().slice(0, 500) };
  }
  // A full disk is the store's condition, not a failed diff: 507 for a caller, "full" on /health.
  if (reported.code === 'DISK_FULL') {
    return new UpdaterError('STORE_FULL', `no space left for the delta engine's output: ${reported.message ?? ''}`, { engineCode: reported.code, exitCode: code });
  }
  // MISMATCH: the patch did not rebuild the target; it is never published.
  return new UpdaterError('DIFF_FAILED', `the delta engine failed (${reported.code ?? `exit ${code}`}): ${reported.message ?? ''}`,
    { engineCode: reported.code ?? null, exitCode: code });
}

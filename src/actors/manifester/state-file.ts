import type { TrackView } from '../../messages/manifester.js';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, isAbsolute } from 'node:path';
import { trackIdProblem, trackKey } from '../../shared/artifact-key.js';
import { replaceFileDurably } from '../../shared/durable-file.js';
import { UpdaterError } from '../../shared/errors.js';
import { isSha256Hex } from '../../shared/hash.js';
import { decodeRollout, encodeRollout, type PersistedRollout } from './rollout/rollout-codec.js';
import type { Track } from './tracks.js';
import { isRecord } from '../../shared/input.js';

// `store.state_file`: the tracks and the default as the manifester last recorded them, so that
// tracks published through the admin API survive a restart (spec 3.2). Versioned JSON, written
// crash-safely (temp, fsync, rename, fsync dir), and validated in full when it is read: a file
// that does not pass stops the server rather than letting it start without its tracks.

export const STATE_FORMAT = 'updater-state';
export const STATE_VERSION = 1;

export interface PersistedState {
  /** The default chosen through the admin API or configuration; '' when none. */
  readonly default: string;
  /**
   * The configuration's `default_artifact` when the file was written. If the configuration
   * names another default at boot, the operator edited it, and the configuration wins.
   */
  readonly configDefault: string;
  readonly tracks: readonly Track[];
}

interface StateDocument {
  format: typeof STATE_FORMAT;
  version: typeof STATE_VERSION;
  saved_at: string;
  default: string;
  config_default: string;
  /** A track's staged rollout is recorded with it, in full (absent when it has none). */
  tracks: (Omit<TrackView, 'rollout'> & { rollout?: PersistedRollout })[];
}

export function encodeState(state: PersistedState): string {
  const doc: StateDocument = {
    format: STATE_FORMAT,
    version: STATE_VERSION,
    saved_at: new Date().toISOString(),
    default: state.default,
    config_default: state.configDefault,
    tracks: state.tracks.map(trackRecord),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** One track as the state file records it (and a cluster's database, as JSON text). */
export function trackRecord(t: Track): StateDocument['tracks'][number] {
  return {
    artifact: t.key, name: t.name, os: t.os, arch: t.arch, version: t.version, hash: t.hash, size: t.size,
    source: t.source, binary: t.binary, history: [...t.history],
    ...(t.rollout ? { rollout: encodeRollout(t.rollout) } : {}),
  };
}

/** Whether two states would record the same thing (the write time aside). */
export function sameState(a: PersistedState, b: PersistedState): boolean {
  const body = (state: PersistedState) => encodeState(state).replace(/"saved_at": "[^"]*",/, '');
  return body(a) === body(b);
}

export async function writeState(path: string, state: PersistedState): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await replaceFileDurably(path, encodeState(state));
}

/** Reads the state file; undefined when it does not exist (a fresh start). */
export async function readState(path: string): Promise<PersistedState | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw corrupt(path, `cannot be read (${code ?? (err as Error).message})`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw corrupt(path, `is not valid JSON (${(err as Error).message})`);
  }
  return decodeState(doc, path);
}

export function decodeState(doc: unknown, path: string): PersistedState {
  const fail = (problem: string): never => {
    throw corrupt(path, problem);
  };
  if (!isRecord(doc)) return fail('is not a JSON object');
  if (doc.format !== STATE_FORMAT) fail(`has format ${JSON.stringify(doc.format)}, expected "${STATE_FORMAT}"`);
  if (doc.version !== STATE_VERSION) fail(`has version ${JSON.stringify(doc.version)}; this server reads version ${STATE_VERSION}`);
  if (!Array.isArray(doc.tracks)) fail('has no tracks list');
  const tracks: Track[] = [];
  const seen = new Set<string>();
  (doc.tracks as unknown[]).forEach((entry, i) => {
    const where = `tracks[${i}]`;
    if (!isRecord(entry)) return fail(`${where} is not an object`);
    const problem = trackIdProblem(entry.name, entry.os, entry.arch);
    if (problem) fail(`${where}: ${problem}`);
    const key = trackKey({ name: entry.name as string, os: (entry.os as string) || '', arch: (entry.arch as string) || '' });
    if (entry.artifact !== key) fail(`${where}.artifact is ${JSON.stringify(entry.artifact)}, expected ${key}`);
    if (seen.has(key)) fail(`${where} repeats the track ${key}`);
    seen.add(key);
    if (typeof entry.version !== 'string' || entry.version === '') fail(`${where}.version must be a non-empty string`);
    if (!isSha256Hex(entry.hash)) fail(`${where}.hash must be 64 lowercase hex characters`);
    if (typeof entry.size !== 'number' || !Number.isSafeInteger(entry.size) || entry.size < 0) fail(`${where}.size must be a non-negative integer`);
    if (entry.source !== 'config' && entry.source !== 'api') fail(`${where}.source must be "config" or "api"`);
    if (typeof entry.binary !== 'string' || !isAbsolute(entry.binary)) fail(`${where}.binary must be an absolute path`);
    if (!Array.isArray(entry.history) || !entry.history.every(isSha256Hex)) fail(`${where}.history must be a list of hashes`);
    let rollout;
    if (entry.rollout !== undefined) {
      try {
        rollout = decodeRollout(entry.rollout, entry.hash as string);
      } catch (err) {
        fail(`${where}.rollout ${(err as Error).message}`);
      }
    }
    tracks.push({
      key, name: entry.name as string, os: (entry.os as string) || '', arch: (entry.arch as string) || '',
      version: entry.version as string, hash: entry.hash as string, size: entry.size as number,
      source: entry.source as 'config' | 'api', binary: entry.binary as string, history: [...(entry.history as string[])],
      ...(rollout ? { rollout } : {}),
    });
  });
  const text = (value: unknown, field: string): string => {
    if (value === undefined || value === null) return '';
    if (typeof value !== 'string') return fail(`${field} must be a string`);
    return value;
  };
  const defaultKey = text(doc.default, 'default');
  if (defaultKey !== '' && !seen.has(defaultKey)) fail(`default names ${defaultKey}, which is not among its tracks`);
  return { default: defaultKey, configDefault: text(doc.config_default, 'config_default'), tracks };
}

function corrupt(path: string, problem: string): UpdaterError {
  return new UpdaterError('STATE_CORRUPT', `store.state_file ${path} ${problem}; the server will not start without the tracks it records (restore it from a backup, or move it away to start with configured tracks only)`, { path });
}

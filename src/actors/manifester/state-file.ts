import type { TrackView } from '../../messages/manifester.js';
import { mkdir, readFile } from 'node:fs/promises';
import { z } from 'zod';
import { dirname, isAbsolute } from 'node:path';
import { trackIdProblem, trackKey } from '../../shared/artifact-key.js';
import { replaceFileDurably } from '../../shared/durable-file.js';
import { UpdaterError } from '../../shared/errors.js';
import { isSha256Hex } from '../../shared/hash.js';
import { checked, decodeRollout, encodeRollout, isCount, isHashList, isText, type PersistedRollout } from './rollout/rollout-codec.js';
import type { Track } from './tracks.js';
import { firstProblem } from '../../shared/input.js';

// `store.state_file`: the tracks and the default as the manifester last recorded them, so that
// tracks published through the admin API survive a restart (docs/operations.md, "The state file"). Versioned JSON, written
// crash-safely (temp, fsync, rename, fsync dir), and validated in full when it is read (a zod
// decoder for its shape, then the checks that span entries): a file that does not pass stops
// the server rather than letting it start without its tracks.

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
  tracks: (Omit<TrackView, 'rollout'> & { rollout?: PersistedRollout; stable_sequence?: number })[];
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
    source: t.source, binary: t.binary, history: [...t.history], sequence: t.sequence,
    ...(t.stableSequence !== undefined ? { stable_sequence: t.stableSequence } : {}),
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

const persistedTrack = z.object({
  // Checked together below: the parts make the key the entry must carry.
  artifact: z.unknown().optional(),
  name: z.unknown().optional(),
  os: z.unknown().optional(),
  arch: z.unknown().optional(),
  version: checked(isText, 'must be a non-empty string'),
  hash: checked(isSha256Hex, 'must be 64 lowercase hex characters'),
  size: checked(isCount, 'must be a non-negative integer'),
  source: z.enum(['config', 'api'], { error: 'must be "config" or "api"' }),
  binary: checked((v): v is string => typeof v === 'string' && isAbsolute(v), 'must be an absolute path'),
  history: checked(isHashList, 'must be a list of hashes'),
  // Files written before release statements have no sequence: 0, and the next publish numbers it.
  sequence: checked(isCount, 'must be a non-negative integer').optional().transform((v) => v ?? 0),
  stable_sequence: checked(isCount, 'must be a non-negative integer').optional(),
  rollout: z.unknown().optional(),
}, { error: 'is not an object' });

/** Absent or null reads as '' (files written before the field existed). */
const optionalText = z.string({ error: 'must be a string' }).nullish().transform((v) => v ?? '');

/** The shape of the file; what spans entries (keys, repeats, the default) is checked after. */
const stateDocument = z.object({
  format: z.custom<typeof STATE_FORMAT>((v) => v === STATE_FORMAT, { error: (iss) => `is ${JSON.stringify(iss.input)}, expected "${STATE_FORMAT}"` }),
  version: z.custom<typeof STATE_VERSION>((v) => v === STATE_VERSION, { error: (iss) => `is ${JSON.stringify(iss.input)}; this server reads version ${STATE_VERSION}` }),
  tracks: z.array(persistedTrack, { error: 'must be a list' }),
  default: optionalText,
  config_default: optionalText,
}, { error: 'is not a JSON object' });

export function decodeState(doc: unknown, path: string): PersistedState {
  const fail = (problem: string): never => {
    throw corrupt(path, problem);
  };
  const parsed = stateDocument.safeParse(doc);
  if (!parsed.success) return fail(firstProblem(parsed.error.issues));
  const tracks: Track[] = [];
  const seen = new Set<string>();
  parsed.data.tracks.forEach((entry, i) => {
    const where = `tracks[${i}]`;
    const problem = trackIdProblem(entry.name, entry.os, entry.arch);
    if (problem) fail(`${where}: ${problem}`);
    // trackIdProblem accepted them: a name, and os and arch both strings or both absent.
    const id = { name: entry.name as string, os: (entry.os as string | undefined) || '', arch: (entry.arch as string | undefined) || '' };
    const key = trackKey(id);
    if (entry.artifact !== key) fail(`${where}.artifact is ${JSON.stringify(entry.artifact)}, expected ${key}`);
    if (seen.has(key)) fail(`${where} repeats the track ${key}`);
    seen.add(key);
    let rollout;
    if (entry.rollout !== undefined) {
      try {
        rollout = decodeRollout(entry.rollout, entry.hash);
      } catch (err) {
        fail(`${where}.rollout ${(err as Error).message}`);
      }
    }
    tracks.push({
      key, ...id, version: entry.version, hash: entry.hash, size: entry.size, source: entry.source, binary: entry.binary,
      history: [...entry.history], sequence: entry.sequence,
      ...(entry.stable_sequence !== undefined ? { stableSequence: entry.stable_sequence } : {}),
      ...(rollout ? { rollout } : {}),
    });
  });
  const defaultKey = parsed.data.default;
  if (defaultKey !== '' && !seen.has(defaultKey)) fail(`default names ${defaultKey}, which is not among its tracks`);
  return { default: defaultKey, configDefault: parsed.data.config_default, tracks };
}

function corrupt(path: string, problem: string): UpdaterError {
  return new UpdaterError('STATE_CORRUPT', `store.state_file ${path} ${problem}; the server will not start without the tracks it records (restore it from a backup, or move it away to start with configured tracks only)`, { path });
}

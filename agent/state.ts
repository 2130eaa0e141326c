import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDir, replaceFileDurably } from '../src/shared/durable-file.js';
import { isSha256Hex } from '../src/shared/hash.js';
import type { Logger } from '../src/shared/logger.js';
import { MAX_VERSION_LABEL_LENGTH } from '../src/shared/version-label.js';
import type { ReportWire } from '../src/shared/wire/keys.js';
import { readCertificate, type KeyCertificate } from '../src/shared/release/certificate.js';
import { isSlotName, type SlotName } from './slots.js';

// Everything the agent must remember across a crash or a restart lives in small JSON files
// in slot_dir, each replaced atomically (temp, fsync, rename, fsync dir). A file that fails
// validation is treated as absent and logged: a damaged state file never stops the device.

export const PENDING_MARKER = '.pending_update';
const STATE_FILE = '.agent-state.json';
/** Targets rolled back on this device are remembered so the same update never loops. */
const MAX_REMEMBERED_ROLLBACKS = 16;
const MAX_UNSENT_REPORTS = 16;

export interface AgentState {
  /** Epoch ms before which no update is attempted (a failed restart_command). */
  cooldownUntil: number;
  /** Epoch ms before which the next cycle does not start (backoff after a failed cycle). */
  backoffUntil: number;
  consecutiveFailures: number;
  /** target_version of the last confirmed update ('' until one happened). */
  runningVersion: string;
  rolledBackTargets: string[];
  /** Update reports the server has not acknowledged yet, oldest first. */
  unsentReports: ReportWire[];
  /** The release statement sequence of the running release (agent/release.ts); 0 before the first. */
  releaseSequence: number;
  /** With root_public_key: the certified signing key of the highest serial trusted (agent/keys.ts). */
  signingCertificate?: KeyCertificate;
  /** Without `artifact` configured: the track of the first release statement verified (agent/release.ts). */
  track?: string;
}

export interface PendingUpdate {
  previous_slot: SlotName;
  previous_hash: string;
  new_slot: SlotName;
  new_hash: string;
  target_version: string;
  /** Agent starts seen with this marker present; the boot phase gives up past the limit. */
  boot_count: number;
  /** The sequence of the installed release's statement, recorded when the boot confirms it. */
  release_sequence?: number;
}

function emptyState(): AgentState {
  return { cooldownUntil: 0, backoffUntil: 0, consecutiveFailures: 0, runningVersion: '', rolledBackTargets: [], unsentReports: [], releaseSequence: 0 };
}

const nonNegative = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function isReport(v: unknown): v is ReportWire {
  const r = v as ReportWire;
  return typeof r === 'object' && r !== null && typeof r.device_id === 'string' && typeof r.success === 'boolean'
    && typeof r.previous_hash === 'string' && typeof r.new_hash === 'string' && nonNegative(r.timestamp);
}

async function readJson(path: string, log: Logger): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text);
  } catch {
    log.error({ path }, 'state file is not valid JSON; ignoring it');
    return null;
  }
}

export class StateStore {
  constructor(private readonly dir: string, private readonly log: Logger) {}

  async load(): Promise<AgentState> {
    const doc = (await readJson(join(this.dir, STATE_FILE), this.log)) as Partial<AgentState> | undefined | null;
    const state = emptyState();
    if (!doc || typeof doc !== 'object') return state;
    if (nonNegative(doc.cooldownUntil)) state.cooldownUntil = doc.cooldownUntil;
    if (nonNegative(doc.backoffUntil)) state.backoffUntil = doc.backoffUntil;
    if (nonNegative(doc.consecutiveFailures)) state.consecutiveFailures = doc.consecutiveFailures;
    if (typeof doc.runningVersion === 'string' && doc.runningVersion.length <= MAX_VERSION_LABEL_LENGTH) state.runningVersion = doc.runningVersion;
    else if (typeof doc.runningVersion === 'string') this.log.warn({ length: doc.runningVersion.length }, `state: runningVersion is longer than ${MAX_VERSION_LABEL_LENGTH} characters; reporting the version as unknown`);
    if (Array.isArray(doc.rolledBackTargets)) state.rolledBackTargets = doc.rolledBackTargets.filter(isSha256Hex);
    if (Array.isArray(doc.unsentReports)) state.unsentReports = doc.unsentReports.filter(isReport);
    if (nonNegative(doc.releaseSequence)) state.releaseSequence = doc.releaseSequence;
    const cert = doc.signingCertificate === undefined ? undefined : readCertificate(doc.signingCertificate);
    if (cert && typeof cert !== 'string') state.signingCertificate = cert;
    if (typeof doc.track === 'string' && doc.track.length > 0) state.track = doc.track;
    return state;
  }

  async save(state: AgentState): Promise<void> {
    state.rolledBackTargets = state.rolledBackTargets.slice(-MAX_REMEMBERED_ROLLBACKS);
    state.unsentReports = state.unsentReports.slice(-MAX_UNSENT_REPORTS);
    await replaceFileDurably(join(this.dir, STATE_FILE), `${JSON.stringify(state)}\n`);
  }

  /** The marker, or undefined when none exists; a damaged marker is returned as 'damaged'. */
  async readPending(): Promise<PendingUpdate | 'damaged' | undefined> {
    const doc = (await readJson(join(this.dir, PENDING_MARKER), this.log)) as PendingUpdate | undefined | null;
    if (doc === undefined) return undefined;
    if (!doc || !isSlotName(doc.previous_slot) || !isSlotName(doc.new_slot) || doc.previous_slot === doc.new_slot
      || !isSha256Hex(doc.previous_hash) || !isSha256Hex(doc.new_hash) || !nonNegative(doc.boot_count)
      || typeof doc.target_version !== 'string' || (doc.release_sequence !== undefined && !nonNegative(doc.release_sequence))) {
      return 'damaged';
    }
    return doc;
  }

  writePending(pending: PendingUpdate): Promise<void> {
    return replaceFileDurably(join(this.dir, PENDING_MARKER), `${JSON.stringify(pending)}\n`);
  }

  async clearPending(): Promise<void> {
    await rm(join(this.dir, PENDING_MARKER), { force: true });
    await fsyncDir(this.dir);
  }
}

import { DEFAULT_DELTA_FORMAT, type DeltaFormat } from '../src/shared/delta-formats.js';
import { UpdaterError } from '../src/shared/errors.js';
import { isSha256Hex } from '../src/shared/hash.js';
import { MAX_VERSION_LABEL_LENGTH } from '../src/shared/version-label.js';

// The server's answer to a heartbeat, validated before the agent acts on any field of it.
// Only the shape is checked here; the signature is checked by the cycle, as step 3.

export type ManifestDecision =
  | { kind: 'up-to-date' }
  | { kind: 'retry-later'; retryAfterSeconds: number }
  | { kind: 'update'; update: SignedUpdate };

export interface SignedUpdate {
  mode: 'delta' | 'full';
  /** The delta's patch format (bsdiff40 unless delta_format names one the agent asked for). */
  format: DeltaFormat;
  endpoint: string;
  targetHash: string;
  targetSize: number;
  targetVersion: string;
  transferHash: string;
  transferSize: number;
  signature: string;
}

function invalid(problem: string): never {
  throw new UpdaterError('AGENT_MANIFEST_INVALID', `the manifest ${problem}`);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const positiveInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/**
 * `runningHash` is the VersionHash this device sent: a delta must start from it. `asked` are
 * the patch formats its heartbeat named: a delta_format outside them is refused.
 */
export function readManifest(body: unknown, runningHash: string, asked: readonly DeltaFormat[] = [DEFAULT_DELTA_FORMAT]): ManifestDecision {
  if (!isObject(body)) invalid('is not an object');
  if (typeof body.update_available !== 'boolean') invalid('has no boolean update_available');
  if (!body.update_available) return { kind: 'up-to-date' };
  const retryAfter = body.retry_after ?? 0;
  if (typeof retryAfter !== 'number' || !Number.isSafeInteger(retryAfter) || retryAfter < 0) invalid('has a bad retry_after');
  if (retryAfter > 0 && body.signature === undefined) return { kind: 'retry-later', retryAfterSeconds: retryAfter };

  if (typeof body.signature !== 'string' || !/^[0-9a-f]{128}$/.test(body.signature)) invalid('has no signature of 128 hex characters');
  if (!isSha256Hex(body.target_hash)) invalid('has a bad target_hash');
  if (!isSha256Hex(body.delta_hash)) invalid('has a bad delta_hash');
  if (!positiveInt(body.target_size)) invalid('has a bad target_size');
  if (!positiveInt(body.delta_size)) invalid('has a bad delta_size');
  const targetVersion = typeof body.target_version === 'string' ? body.target_version : '';
  // The label comes back in every heartbeat, which the server refuses past this length: a
  // longer one is refused here, whole, rather than cut into a label the server never sent.
  if (targetVersion.length > MAX_VERSION_LABEL_LENGTH) invalid(`has a target_version longer than ${MAX_VERSION_LABEL_LENGTH} characters`);
  const delta = body.delta_endpoint;
  const binary = body.binary_endpoint;
  if ((delta === undefined) === (binary === undefined)) invalid('must set exactly one of delta_endpoint and binary_endpoint');
  let mode: 'delta' | 'full';
  let endpoint: string;
  const named = body.delta_format ?? DEFAULT_DELTA_FORMAT;
  // bsdiff40 is always understood: a server that knows no formats answers with it.
  if (named !== DEFAULT_DELTA_FORMAT && !asked.includes(named as DeltaFormat)) invalid(`names a delta_format the agent did not ask for (${String(named).slice(0, 40)})`);
  const format = named as DeltaFormat;
  if (delta !== undefined) {
    const path = `/delta/${runningHash}/${body.target_hash}${format === DEFAULT_DELTA_FORMAT ? '' : `/${format}`}`;
    if (delta !== path) invalid(`names a delta_endpoint that does not lead from ${runningHash} to target_hash in ${format}`);
    mode = 'delta';
    endpoint = delta;
  } else {
    if (binary !== `/binary/${body.target_hash}`) invalid('names a binary_endpoint that is not the target');
    mode = 'full';
    endpoint = binary as string;
  }
  return {
    kind: 'update',
    update: {
      mode, format: mode === 'delta' ? format : DEFAULT_DELTA_FORMAT, endpoint, targetVersion, signature: body.signature,
      targetHash: body.target_hash, targetSize: body.target_size,
      transferHash: body.delta_hash, transferSize: body.delta_size,
    },
  };
}

import type { PublishRequest, RolloutCommand } from '../../../messages/manifester.js';
import { makeTrackId, parseTrackKey, trackKey } from '../../../shared/artifact-key.js';
import { UpdaterError } from '../../../shared/errors.js';
import { assertSha256Hex } from '../../../shared/hash.js';
import { invalidField as fail, isRecord, refuseUnknownFields as refuseUnknown } from '../../../shared/input.js';
import { isLogLevel, type LogLevel } from '../../../shared/logger.js';
import { isPercent, parseRolloutPlan } from '../../../shared/rollout-plan.js';
import { versionLabelProblem } from '../../../shared/version-label.js';
import { parseJson } from '../server/body.js';

// Validation of admin request bodies (docs/operations.md, "The calls"). Track keys are checked here,
// at the boundary, with the same rules as configuration and heartbeats (docs/configuration.md, "Track keys").

/** Admin bodies are a few fields and a path; anything larger is refused before it is parsed. */
export const MAX_ADMIN_BODY_BYTES = 16 * 1024;
const MAX_PATH_LENGTH = 4096;

export function objectBody(body: Buffer, allowEmpty: boolean): Record<string, unknown> {
  if (body.length === 0 || body.toString('utf8').trim() === '') {
    if (allowEmpty) return {};
    throw new UpdaterError('MALFORMED_BODY', 'a JSON object body is required');
  }
  const value = parseJson(body);
  if (!isRecord(value)) throw new UpdaterError('MALFORMED_BODY', 'the body must be a JSON object');
  return value;
}

/** A track key from a body field or query parameter, normalized (`name` or `name/os/arch`). */
export function artifactKey(value: unknown, field = 'artifact'): string {
  if (value === undefined || value === null || value === '') fail(field, 'is required');
  return trackKey(parseTrackKey(value));
}

export function parsePublishBody(body: Buffer): PublishRequest {
  const fields = objectBody(body, false);
  refuseUnknown(fields, ['name', 'os', 'arch', 'version', 'binary', 'hash', 'rollout']);
  const id = makeTrackId(fields.name, fields.os, fields.arch);
  const versionProblem = versionLabelProblem(fields.version);
  if (versionProblem !== undefined) fail('version', versionProblem);
  const version = fields.version as string;
  const rollout = fields.rollout !== undefined ? { rollout: parseRolloutPlan(fields.rollout) } : {};
  if ((fields.binary === undefined) === (fields.hash === undefined)) fail('binary', 'or hash is required, and only one of them');
  // An uploaded binary (PUT /admin/binaries), named by its hash.
  if (fields.hash !== undefined) return { ...id, version, hash: assertSha256Hex(fields.hash, 'hash'), ...rollout };
  const binary = fields.binary;
  if (typeof binary !== 'string' || binary === '') fail('binary', 'must be a server-side file path');
  if (binary.length > MAX_PATH_LENGTH || binary.includes('\u0000')) fail('binary', 'is not a usable path');
  if (!binary.startsWith('/')) fail('binary', 'must be an absolute path (the server resolves nothing relative to its working directory)');
  return { ...id, version, binary, ...rollout };
}

const ROLLOUT_ACTIONS = ['pause', 'resume', 'abort', 'complete', 'advance'] as const;

/** `POST /admin/rollout`: `{artifact, action, rollback?}` or `{artifact, percent}`. */
export function parseRolloutBody(body: Buffer): RolloutCommand {
  const fields = objectBody(body, false);
  refuseUnknown(fields, ['artifact', 'action', 'rollback', 'percent']);
  const artifact = artifactKey(fields.artifact);
  if ((fields.action === undefined) === (fields.percent === undefined)) fail('action', 'or percent is required, and only one of them');
  if (fields.percent !== undefined) {
    if (fields.rollback !== undefined) fail('rollback', 'goes only with the action abort');
    if (!isPercent(fields.percent)) fail('percent', 'must be a number from 0 to 100 (two decimals at most)');
    return { artifact, percent: fields.percent };
  }
  const action = fields.action as (typeof ROLLOUT_ACTIONS)[number];
  if (!ROLLOUT_ACTIONS.includes(action)) fail('action', `must be one of ${ROLLOUT_ACTIONS.join(', ')}`);
  if (fields.rollback !== undefined && typeof fields.rollback !== 'boolean') fail('rollback', 'must be true or false');
  if (fields.rollback === true && action !== 'abort') fail('rollback', 'goes only with the action abort');
  return { artifact, action, rollback: fields.rollback === true };
}

export function parseArtifactBody(body: Buffer, allowEmpty: boolean): string | undefined {
  const fields = objectBody(body, allowEmpty);
  refuseUnknown(fields, ['artifact']);
  if (allowEmpty && fields.artifact === undefined) return undefined;
  return artifactKey(fields.artifact);
}

export function parseLogLevelBody(body: Buffer): LogLevel {
  const fields = objectBody(body, false);
  refuseUnknown(fields, ['level']);
  if (!isLogLevel(fields.level)) fail('level', 'must be one of trace, debug, info, warn, error');
  return fields.level;
}

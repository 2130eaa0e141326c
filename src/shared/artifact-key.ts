import { UpdaterError } from './errors.js';

// Track keys reach request paths, retention bookkeeping and log fields, so they are checked
// at every boundary (configuration, admin API, heartbeat) with the same rules (docs/configuration.md, "Track keys").
const NAME = /^[A-Za-z0-9._-]{1,128}$/;
const PLATFORM_TOKEN = /^[a-z0-9]{1,32}$/;

export interface TrackId {
  readonly name: string;
  readonly os: string;
  readonly arch: string;
}

export function trackKey(id: TrackId): string {
  return id.os ? `${id.name}/${id.os}/${id.arch}` : id.name;
}

/** Returns why the triple is not a valid track, or undefined when it is. */
export function trackIdProblem(name: unknown, os: unknown, arch: unknown): string | undefined {
  if (typeof name !== 'string' || !NAME.test(name)) return 'name must match [A-Za-z0-9._-] (1 to 128 characters)';
  if (name === '.' || name === '..') return 'name must not be "." or ".."';
  const osSet = os !== undefined && os !== null && os !== '';
  const archSet = arch !== undefined && arch !== null && arch !== '';
  if (osSet !== archSet) return 'os and arch must be set together or both left out';
  if (osSet && (typeof os !== 'string' || !PLATFORM_TOKEN.test(os))) return 'os must match [a-z0-9]';
  if (archSet && (typeof arch !== 'string' || !PLATFORM_TOKEN.test(arch))) return 'arch must match [a-z0-9]';
  return undefined;
}

export function makeTrackId(name: unknown, os: unknown, arch: unknown): TrackId {
  const problem = trackIdProblem(name, os, arch);
  if (problem) throw new UpdaterError('INVALID_ARTIFACT_KEY', problem);
  return { name: name as string, os: (os as string) || '', arch: (arch as string) || '' };
}

/** Parses `name` or `name/os/arch`. */
export function parseTrackKey(key: unknown): TrackId {
  if (typeof key !== 'string') throw new UpdaterError('INVALID_ARTIFACT_KEY', 'artifact must be a string');
  const parts = key.split('/');
  if (parts.length === 1) return makeTrackId(parts[0], '', '');
  if (parts.length === 2) throw new UpdaterError('INVALID_ARTIFACT_KEY', 'os and arch must be set together or both left out (name/os/arch)');
  if (parts.length === 3) {
    if (!parts[1] || !parts[2]) throw new UpdaterError('INVALID_ARTIFACT_KEY', 'os and arch must be set together or both left out');
    return makeTrackId(parts[0], parts[1], parts[2]);
  }
  throw new UpdaterError('INVALID_ARTIFACT_KEY', 'artifact must be name or name/os/arch');
}

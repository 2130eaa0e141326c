import { accessSync, constants as fsc, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseTrackKey, trackIdProblem, trackKey } from '../artifact-key.js';
import { engineOf } from '../database/location.js';
import { versionLabelProblem } from '../version-label.js';
import { ConfigError, readYamlFile } from './document.js';
import { checkListeners } from './listen.js';
import { parseDocument } from './schema-kit.js';
import { configSchema, type ConfigDocument } from './schema.js';
import type { ArtifactConfig, Config, WebhookConfig } from './types.js';

export { ConfigError } from './document.js';

// The keys, their defaults and units are declared in schema.ts; this file adds the checks that
// span keys or touch the file system, then freezes the result.

const MIN_TOKEN_LENGTH = 32;

/** Reads, validates and freezes the configuration; throws ConfigError naming the key. */
export function loadConfigFile(path: string): Config {
  return validateConfig(readYamlFile(path), resolve(path));
}

export function validateConfig(doc: unknown, configPath: string): Config {
  const parsed = parseDocument(configSchema(dirname(configPath)), doc);
  checkListeners(parsed);
  const { target: _target, artifacts: _artifacts, defaultArtifact: _default, database, admin, webhooks, ...rest } = parsed;
  const artifacts = readArtifacts(parsed);
  // The fleet database defaults to an SQLite file in the store directory.
  const location = database ?? resolve(parsed.store.dir, 'updater.db');
  // Whether this server is a cluster replica, decided here once; every actor reads config.cluster.
  const cluster = engineOf(location) === 'postgres';
  checkClusterKeys(cluster, parsed.store.stateFile);
  if (parsed.devices.auth === 'on' && !parsed.fleet.enabled) {
    throw new ConfigError('devices.auth', 'on needs the fleet database (fleet.enabled: true): device identities live there');
  }
  const config: Config = {
    configPath,
    ...rest,
    admin: {
      token: readAdminToken(admin),
      ...(admin.tokenFile !== undefined ? { tokenFile: admin.tokenFile } : {}),
      authFailureBurst: admin.authFailureBurst,
      authFailureRefillPerSecond: admin.authFailureRefillPerSecond,
      auditMaxAgeMs: admin.auditMaxAgeMs,
      maxUploadBytes: admin.maxUploadBytes,
    },
    webhooks: readWebhooks(webhooks ?? [], parsed.fleet.enabled),
    artifacts,
    database: location,
    cluster,
    // With a state file or a cluster's database, the default may name a track published through the admin API.
    ...readDefaultArtifact(parsed.defaultArtifact, artifacts, parsed.store.stateFile !== undefined || cluster),
  };
  checkRegularReadableFile(config.signing.privateKeyFile, 'signing.private_key_file');
  if (config.signing.certificateFile !== undefined) checkRegularReadableFile(config.signing.certificateFile, 'signing.certificate_file');
  return deepFreeze(config);
}

/** Cluster mode (docs/scaling.md): the tracks live in PostgreSQL, so a state file would be a second truth. */
function checkClusterKeys(clustered: boolean, stateFile: string | undefined): void {
  if (clustered && stateFile !== undefined) {
    throw new ConfigError('store.state_file', 'must not be set with a postgres:// database: the tracks live in the database then (docs/scaling.md)');
  }
}

function readAdminToken(admin: ConfigDocument['admin']): string {
  if (admin.token !== undefined && admin.tokenFile !== undefined) {
    throw new ConfigError('admin.token', 'and admin.token_file are exclusive; set one');
  }
  let token = admin.token;
  if (admin.tokenFile !== undefined) {
    try {
      token = readFileSync(admin.tokenFile, 'utf8').trim();
    } catch (err) {
      throw new ConfigError('admin.token_file', `cannot read ${admin.tokenFile}: ${(err as Error).message}`);
    }
  }
  const key = admin.tokenFile !== undefined ? 'admin.token_file' : 'admin.token';
  if (token === undefined) throw new ConfigError('admin.token', 'is required (or admin.token_file)');
  // The length is stated, never the token itself.
  if (token.length < MIN_TOKEN_LENGTH) throw new ConfigError(key, `must be at least ${MIN_TOKEN_LENGTH} characters`);
  if (/\s/.test(token)) throw new ConfigError(key, 'must not contain white space');
  return token;
}

const MIN_WEBHOOK_SECRET_LENGTH = 16;

/** Reads each webhook's secret now, so a missing or short one stops the start, not the first delivery. */
function readWebhooks(entries: NonNullable<ConfigDocument['webhooks']>, fleetEnabled: boolean): WebhookConfig[] {
  if (entries.length > 0 && !fleetEnabled) {
    throw new ConfigError('webhooks', 'need the fleet database, where their outbox lives; set fleet.enabled: true');
  }
  const urls = new Set<string>();
  return entries.map((entry, i) => {
    const key = `webhooks[${i}]`;
    // The URL names the webhook's outbox queue: two entries with one URL would share it.
    if (urls.has(entry.url)) throw new ConfigError(`${key}.url`, 'names a URL an earlier webhook already has; merge their events');
    urls.add(entry.url);
    let secret: string;
    try {
      secret = readFileSync(entry.secretFile, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(`${key}.secret_file`, `cannot read ${entry.secretFile}: ${(err as Error).message}`);
    }
    // The length is stated, never the secret itself.
    if (secret.length < MIN_WEBHOOK_SECRET_LENGTH) throw new ConfigError(`${key}.secret_file`, `must hold at least ${MIN_WEBHOOK_SECRET_LENGTH} characters`);
    return { ...entry, secret };
  });
}

function readArtifacts(doc: ConfigDocument): ArtifactConfig[] {
  if (doc.artifacts !== undefined && doc.target !== undefined) {
    throw new ConfigError('target', 'cannot be combined with artifacts; move it into the artifacts list');
  }
  const entries = doc.target
    ? [{ entry: { ...doc.target, name: 'default' as string | undefined, os: undefined, arch: undefined }, path: 'target' }]
    : (doc.artifacts ?? []).map((entry, i) => ({ entry, path: `artifacts[${i}]` }));
  const seen = new Set<string>();
  return entries.map(({ entry, path }) => {
    const { name, os = '', arch = '', version, binary } = entry;
    const problem = trackIdProblem(name, os, arch);
    if (problem) throw new ConfigError(path, problem);
    const key = trackKey({ name: name!, os, arch });
    if (seen.has(key)) throw new ConfigError(path, `declares the track ${key} a second time`);
    seen.add(key);
    // The label is part of the signed release statement (src/shared/version-label.ts).
    const versionProblem = versionLabelProblem(version);
    if (versionProblem) throw new ConfigError(`${path}.version`, versionProblem);
    checkRegularReadableFile(binary, `${path}.binary`);
    return { key, name: name!, os, arch, version, binary };
  });
}

function readDefaultArtifact(value: string | undefined, artifacts: readonly ArtifactConfig[], hasStateFile: boolean): { defaultArtifact?: string } {
  if (value === undefined) {
    if (artifacts.length > 1) {
      throw new ConfigError('default_artifact', `is required when more than one track is configured (${artifacts.length} are)`);
    }
    return artifacts.length === 1 ? { defaultArtifact: artifacts[0]!.key } : {};
  }
  let key: string;
  try {
    key = trackKey(parseTrackKey(value));
  } catch (err) {
    throw new ConfigError('default_artifact', (err as Error).message);
  }
  // With a state file the default may name a track published through the admin API.
  if (!hasStateFile && !artifacts.some((a) => a.key === key)) {
    throw new ConfigError('default_artifact', `names ${key}, which is not a configured track`);
  }
  return { defaultArtifact: key };
}

function checkRegularReadableFile(path: string, key: string): void {
  try {
    if (!statSync(path).isFile()) throw new Error('not a regular file');
    accessSync(path, fsc.R_OK);
  } catch (err) {
    throw new ConfigError(key, `cannot read ${path}: ${(err as Error).message}`);
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

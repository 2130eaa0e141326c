import { accessSync, constants as fsc, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseTrackKey, trackIdProblem, trackKey } from '../artifact-key.js';
import { isLogLevel } from '../logger.js';
import { ConfigError, bool, readYamlFile, duration, int, isMap, refuseUnknown, section, str, strList, type Node } from './fields.js';
import { readListen } from './listen.js';
import { DELTA_ENGINES, type ArtifactConfig, type Config, type DeltaEngine } from './types.js';

export { ConfigError } from './fields.js';

const TOP_KEYS = ['listen', 'signing', 'admin', 'store', 'manifest', 'allow_full_download', 'log_level', 'retention',
  'artifacts', 'target', 'default_artifact', 'coap', 'database', 'fleet', 'tls'] as const;
const MIN_TOKEN_LENGTH = 32;
const MB = 1024 * 1024;

/** Reads, validates and freezes the configuration; throws ConfigError naming the key. */
export function loadConfigFile(path: string): Config {
  return validateConfig(readYamlFile(path), resolve(path));
}

export function validateConfig(doc: unknown, configPath: string): Config {
  if (!isMap(doc)) throw new ConfigError('(top level)', 'must be a YAML map');
  refuseUnknown(doc, '', TOP_KEYS);
  const base = dirname(configPath);
  const pathOf = (p: string) => (isAbsolute(p) ? p : resolve(base, p));

  const signing = section(doc, 'signing', 'signing', ['private_key_file']);
  const admin = section(doc, 'admin', 'admin', ['token', 'token_file', 'auth_failure_burst', 'auth_failure_refill_per_second']);
  const store = section(doc, 'store', 'store', ['dir', 'state_file', 'target_cache_mb', 'hot_delta_cache_mb',
    'delta_concurrency', 'delta_max_source_mb', 'delta_engine', 'full_compression_level', 'watch_settle', 'publish_roots']);
  const manifest = section(doc, 'manifest', 'manifest', ['cache_size', 'chunk_size', 'retry_after']);
  const coap = section(doc, 'coap', 'coap', ['dedup_cache_bytes', 'max_in_flight']);
  const fleet = section(doc, 'fleet', 'fleet', ['enabled', 'flush_interval', 'buffer_mb', 'device_max_age', 'report_max_age']);
  const retention = section(doc, 'retention', 'retention', ['enabled', 'interval', 'history_depth', 'delta_max_age',
    'deltas_max_total_mb', 'collect_orphan_binaries', 'orphan_binary_min_age']);

  const keyFile = str(signing, 'private_key_file', 'signing');
  if (!keyFile) throw new ConfigError('signing.private_key_file', 'is required (create one with "updater keygen --out FILE")');
  const storeDir = str(store, 'dir', 'store');
  if (!storeDir) throw new ConfigError('store.dir', 'is required');
  const stateFile = str(store, 'state_file', 'store');
  const database = readDatabase(doc, pathOf(storeDir), pathOf);
  const clustered = /^postgres(ql)?:/.test(database);
  checkClusterKeys(clustered, stateFile);

  const logLevel = doc.log_level ?? 'info';
  if (!isLogLevel(logLevel)) throw new ConfigError('log_level', 'must be one of trace, debug, info, warn, error');

  const artifacts = readArtifacts(doc, pathOf);
  const config: Config = {
    configPath,
    ...readListen(doc, pathOf),
    // node-coap's duplicate-detection cache is unbounded in practice at its 32 MiB default
    // (each entry also pins a retransmission sender): it is a budget of its own (docs/coap.md).
    coap: {
      dedupCacheBytes: int(coap, 'dedup_cache_bytes', 'coap', MB, 4096, 1024 * MB),
      maxInFlight: int(coap, 'max_in_flight', 'coap', 1024, 1, 1_000_000),
    },
    signing: { privateKeyFile: pathOf(keyFile) },
    admin: {
      token: readAdminToken(admin, pathOf),
      ...(admin.token_file !== undefined ? { tokenFile: pathOf(String(admin.token_file)) } : {}),
      authFailureBurst: int(admin, 'auth_failure_burst', 'admin', 10, 1),
      authFailureRefillPerSecond: int(admin, 'auth_failure_refill_per_second', 'admin', 1, 1),
    },
    store: {
      dir: pathOf(storeDir),
      ...(stateFile ? { stateFile: pathOf(stateFile) } : {}),
      targetCacheMb: int(store, 'target_cache_mb', 'store', 256, 0),
      hotDeltaCacheMb: int(store, 'hot_delta_cache_mb', 'store', 64, 0),
      deltaConcurrency: int(store, 'delta_concurrency', 'store', 2, 1, 64),
      deltaMaxSourceMb: int(store, 'delta_max_source_mb', 'store', 512, 0),
      deltaEngine: deltaEngine(store),
      fullCompressionLevel: int(store, 'full_compression_level', 'store', 19, 1, 22),
      // A watched binary must stay unchanged this long before it is republished.
      watchSettleMs: duration(store, 'watch_settle', 'store', '5s', 100),
      // Directories the admin API may publish from (besides the configured artifacts' own).
      publishRoots: strList(store, 'publish_roots', 'store').map(pathOf),
    },
    manifest: {
      cacheSize: int(manifest, 'cache_size', 'manifest', 10_000, 0),
      chunkSize: int(manifest, 'chunk_size', 'manifest', 65_536, 16, 16 * MB),
      retryAfterSeconds: Math.ceil(duration(manifest, 'retry_after', 'manifest', '30s', 1000) / 1000),
    },
    allowFullDownload: bool(doc, 'allow_full_download', '', false),
    logLevel,
    retention: {
      enabled: bool(retention, 'enabled', 'retention', false),
      intervalMs: duration(retention, 'interval', 'retention', '6h', 1000),
      historyDepth: int(retention, 'history_depth', 'retention', 3, 0, 1000),
      deltaMaxAgeMs: duration(retention, 'delta_max_age', 'retention', '720h', 1000),
      deltasMaxTotalMb: int(retention, 'deltas_max_total_mb', 'retention', 0, 0),
      collectOrphanBinaries: bool(retention, 'collect_orphan_binaries', 'retention', false),
      orphanBinaryMinAgeMs: duration(retention, 'orphan_binary_min_age', 'retention', '24h', 0),
    },
    artifacts,
    ...readDefaultArtifact(doc, artifacts, stateFile !== undefined || clustered),
    database,
    fleet: {
      enabled: bool(fleet, 'enabled', 'fleet', true),
      flushIntervalMs: duration(fleet, 'flush_interval', 'fleet', '1s', 10),
      bufferMb: int(fleet, 'buffer_mb', 'fleet', 16, 1, 64 * 1024),
      deviceMaxAgeMs: maxAge(fleet, 'device_max_age', '2160h'),
      reportMaxAgeMs: maxAge(fleet, 'report_max_age', '720h'),
    },
  };
  checkKeyFileReadable(config.signing.privateKeyFile);
  return deepFreeze(config);
}

/** Cluster mode (docs/scaling.md): the tracks live in PostgreSQL, so a state file would be a second truth. */
function checkClusterKeys(clustered: boolean, stateFile: string | undefined): void {
  if (clustered && stateFile !== undefined) {
    throw new ConfigError('store.state_file', 'must not be set with a postgres:// database: the tracks live in the database then (docs/scaling.md)');
  }
}

/** A fleet age limit: a duration, or 0 (number or text) for "keep forever". */
function maxAge(fleet: Node, key: string, fallback: string): number {
  const value = fleet[key];
  if (value === 0 || value === '0') return 0;
  return duration(fleet, key, 'fleet', fallback, 1000);
}

/** `database`: a postgres:// URL as given, or an SQLite file (default: updater.db in the store dir). */
function readDatabase(doc: Node, storeDir: string, pathOf: (p: string) => string): string {
  const value = str(doc, 'database', '');
  if (value === undefined) return resolve(storeDir, 'updater.db');
  if (value.trim() === '') throw new ConfigError('database', 'must be a file path or a postgres:// URL');
  if (/^postgres(ql)?:/.test(value)) {
    try {
      new URL(value);
    } catch {
      throw new ConfigError('database', 'is not a valid postgres:// URL');
    }
    return value;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) throw new ConfigError('database', 'must be a file path or a postgres:// URL (no other scheme is supported)');
  return pathOf(value);
}

function deltaEngine(store: Node): DeltaEngine {
  const engine = str(store, 'delta_engine', 'store', 'native')!;
  if (!(DELTA_ENGINES as readonly string[]).includes(engine)) {
    throw new ConfigError('store.delta_engine', `must be one of ${DELTA_ENGINES.join(', ')}`);
  }
  return engine as DeltaEngine;
}

function readAdminToken(admin: Node, pathOf: (p: string) => string): string {
  if (admin.token !== undefined && admin.token_file !== undefined) {
    throw new ConfigError('admin.token', 'and admin.token_file are exclusive; set one');
  }
  let token: string | undefined;
  if (admin.token_file !== undefined) {
    const file = pathOf(str(admin, 'token_file', 'admin')!);
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new ConfigError('admin.token_file', `cannot read ${file}: ${(err as Error).message}`);
    }
  } else if (admin.token !== undefined) {
    if (typeof admin.token !== 'string') throw new ConfigError('admin.token', 'must be a string');
    token = admin.token;
  }
  const key = admin.token_file !== undefined ? 'admin.token_file' : 'admin.token';
  if (token === undefined) throw new ConfigError('admin.token', 'is required (or admin.token_file)');
  // The length is stated, never the token itself.
  if (token.length < MIN_TOKEN_LENGTH) throw new ConfigError(key, `must be at least ${MIN_TOKEN_LENGTH} characters`);
  if (/\s/.test(token)) throw new ConfigError(key, 'must not contain white space');
  return token;
}

function readArtifacts(doc: Node, pathOf: (p: string) => string): ArtifactConfig[] {
  if (doc.artifacts !== undefined && doc.target !== undefined) {
    throw new ConfigError('target', 'cannot be combined with artifacts; move it into the artifacts list');
  }
  const entries: { node: Node; path: string; fixedName?: string }[] = [];
  if (doc.target !== undefined) {
    if (!isMap(doc.target)) throw new ConfigError('target', 'must be a map with version and binary');
    refuseUnknown(doc.target, 'target', ['version', 'binary']);
    entries.push({ node: doc.target, path: 'target', fixedName: 'default' });
  } else if (doc.artifacts !== undefined && doc.artifacts !== null) {
    if (!Array.isArray(doc.artifacts)) throw new ConfigError('artifacts', 'must be a list');
    doc.artifacts.forEach((node, i) => {
      const path = `artifacts[${i}]`;
      if (!isMap(node)) throw new ConfigError(path, 'must be a map with name, version and binary');
      refuseUnknown(node, path, ['name', 'os', 'arch', 'version', 'binary']);
      entries.push({ node, path });
    });
  }
  const seen = new Set<string>();
  return entries.map(({ node, path, fixedName }) => {
    const name = fixedName ?? node.name;
    const os = node.os ?? '';
    const arch = node.arch ?? '';
    const problem = trackIdProblem(name, os, arch);
    if (problem) throw new ConfigError(`${path}`, problem);
    const key = trackKey({ name: name as string, os: os as string, arch: arch as string });
    if (seen.has(key)) throw new ConfigError(path, `declares the track ${key} a second time`);
    seen.add(key);
    const version = str(node, 'version', path);
    if (!version) throw new ConfigError(`${path}.version`, 'is required');
    const binaryText = str(node, 'binary', path);
    if (!binaryText) throw new ConfigError(`${path}.binary`, 'is required');
    const binary = pathOf(binaryText);
    checkRegularReadableFile(binary, `${path}.binary`);
    return { key, name: name as string, os: os as string, arch: arch as string, version, binary };
  });
}

function readDefaultArtifact(doc: Node, artifacts: readonly ArtifactConfig[], hasStateFile: boolean): { defaultArtifact?: string } {
  const value = doc.default_artifact;
  if (value === undefined || value === null) {
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

function checkKeyFileReadable(path: string): void {
  checkRegularReadableFile(path, 'signing.private_key_file');
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export const BYTES_PER_MB = MB;

import { dirname, isAbsolute, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import { parseTrackKey, trackKey } from '../src/shared/artifact-key.js';
import { ConfigError, int, isMap, readTextFile, readYamlFile, refuseUnknown, str, type Node } from '../src/shared/config/fields.js';
import { parseDuration } from '../src/shared/duration.js';
import { isLogLevel, type LogLevel } from '../src/shared/logger.js';

export { ConfigError } from '../src/shared/config/fields.js';

// The agent's YAML configuration (interface.md "Agent configuration"), validated once and
// frozen. Keys beyond interface.md tune retry and download policy; each default sits beside
// its key here and in docs/agent.md.

export type TransportName = 'http' | 'coap';

export interface AgentConfig {
  readonly configPath: string;
  readonly deviceId: string;
  /** Empty: the server's default track. */
  readonly artifact: string;
  readonly publicKey: string;
  readonly httpUrl?: string;
  /** PEM certificates the HTTPS server's chain must end in, instead of Node's built-in roots. */
  readonly caCertificates?: string;
  readonly coapUrl?: string;
  readonly primary: TransportName;
  readonly slotDir: string;
  readonly intervalMs: number;
  readonly restartCommand: string;
  readonly logLevel: LogLevel;
  /** Boot-phase health-check heartbeats before a rollback (spec: up to 3). */
  readonly healthCheckTries: number;
  readonly healthCheckDelayMs: number;
  /** Agent starts with a pending update before it gives up on the new slot. */
  readonly maxBootAttempts: number;
  /** Download attempts within one cycle; each resumes from the durable offset. */
  readonly downloadAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** Backoff floor after ENOSPC (spec 3.5: 5 minutes). */
  readonly diskFullBackoffMs: number;
  /** Persisted cooldown after restart_command fails (spec 3.5: default 1 hour). */
  readonly restartCooldownMs: number;
  /** A download averaging fewer bytes per second than this over one window is aborted. */
  readonly minThroughputBytesPerSecond: number;
  readonly throughputWindowMs: number;
  /** Hard deadline of one download attempt. */
  readonly downloadDeadlineMs: number;
  /** Deadline of one heartbeat or report request. */
  readonly requestTimeoutMs: number;
  /** Bytes between durable download checkpoints (fsync, then the offset is recorded). */
  readonly checkpointBytes: number;
}

const KEYS = ['device_id', 'artifact', 'public_key', 'http_url', 'coap_url', 'primary', 'slot_dir', 'interval',
  'restart_command', 'log_level', 'health_check_tries', 'health_check_delay', 'max_boot_attempts', 'download_attempts',
  'retry_base', 'retry_max', 'disk_full_backoff', 'restart_cooldown', 'min_throughput_bps', 'throughput_window',
  'download_deadline', 'request_timeout', 'checkpoint_kb', 'ca_file'] as const;

export function loadAgentConfigFile(path: string): AgentConfig {
  return validateAgentConfig(readYamlFile(path), resolve(path));
}

function url(node: Node, key: string, scheme: 'http:' | 'coap:'): string | undefined {
  const text = str(node, key, '');
  if (text === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new ConfigError(key, `must be a URL like ${scheme}//127.0.0.1:${scheme === 'http:' ? 8080 : 5683} (got ${JSON.stringify(text)})`);
  }
  const allowed = scheme === 'http:' ? ['http:', 'https:'] : ['coap:'];
  if (!allowed.includes(parsed.protocol)) throw new ConfigError(key, `must use ${allowed.join(' or ')} (got ${parsed.protocol})`);
  if ((parsed.pathname !== '/' && parsed.pathname !== '') || parsed.search || parsed.hash) throw new ConfigError(key, 'must be a base address without a path');
  return text.replace(/\/+$/, '');
}

/** The CA file is read and parsed now, so a wrong path fails the start and not the first heartbeat. */
function caCertificates(node: Node, base: string, httpUrl: string | undefined): string | undefined {
  const text = str(node, 'ca_file', '');
  if (text === undefined) return undefined;
  if (!httpUrl?.startsWith('https:')) throw new ConfigError('ca_file', 'needs an https:// http_url (it verifies the HTTPS server)');
  const path = isAbsolute(text) ? text : resolve(base, text);
  const pem = readTextFile(path, 'ca_file');
  try {
    createSecureContext({ ca: pem });
  } catch (err) {
    throw new ConfigError('ca_file', `${path} holds no usable PEM certificate: ${(err as Error).message}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError('ca_file', `${path} holds no PEM certificate`);
  return pem;
}

function duration(node: Node, key: string, fallback: string, minMs = 1): number {
  const value = node[key] ?? fallback;
  const ms = parseDuration(value);
  if (ms === undefined || ms < minMs) {
    throw new ConfigError(key, `must be a duration like 500ms, 90s, 5m or 1h${minMs > 1 ? ` of at least ${minMs} ms` : ''} (got ${JSON.stringify(value)})`);
  }
  return ms;
}

export function validateAgentConfig(doc: unknown, configPath: string): AgentConfig {
  if (!isMap(doc)) throw new ConfigError('(top level)', 'must be a YAML map');
  refuseUnknown(doc, '', KEYS);
  const base = dirname(configPath);

  const deviceId = str(doc, 'device_id', '');
  if (!deviceId) throw new ConfigError('device_id', 'is required');
  if (deviceId.length > 128) throw new ConfigError('device_id', 'must be at most 128 characters');

  let artifact = '';
  const artifactText = str(doc, 'artifact', '');
  if (artifactText !== undefined) {
    try {
      artifact = trackKey(parseTrackKey(artifactText));
    } catch (err) {
      throw new ConfigError('artifact', (err as Error).message.replace(/^artifact /, ''));
    }
  }

  const publicKey = doc.public_key;
  if (typeof publicKey !== 'string' || !/^[0-9a-f]{64}$/.test(publicKey)) {
    throw new ConfigError('public_key', 'must be 64 lowercase hex characters (as printed by "updater keygen")');
  }

  const httpUrl = url(doc, 'http_url', 'http:');
  const coapUrl = url(doc, 'coap_url', 'coap:');
  const ca = caCertificates(doc, base, httpUrl);
  const primary = doc.primary ?? (httpUrl ? 'http' : 'coap');
  if (primary !== 'http' && primary !== 'coap') throw new ConfigError('primary', 'must be http or coap');
  if (primary === 'http' && !httpUrl) throw new ConfigError('http_url', 'is required when primary is http');
  if (primary === 'coap' && !coapUrl) throw new ConfigError('coap_url', 'is required when primary is coap');

  const slotDirText = str(doc, 'slot_dir', '');
  if (!slotDirText) throw new ConfigError('slot_dir', 'is required');
  const restartCommand = str(doc, 'restart_command', '');
  if (!restartCommand) throw new ConfigError('restart_command', 'is required (the command that restarts into the new binary)');

  const logLevel = doc.log_level ?? 'info';
  if (!isLogLevel(logLevel)) throw new ConfigError('log_level', 'must be one of trace, debug, info, warn, error');

  const config: AgentConfig = {
    configPath,
    deviceId,
    artifact,
    publicKey,
    ...(httpUrl ? { httpUrl } : {}),
    ...(ca ? { caCertificates: ca } : {}),
    ...(coapUrl ? { coapUrl } : {}),
    primary,
    slotDir: isAbsolute(slotDirText) ? slotDirText : resolve(base, slotDirText),
    intervalMs: duration(doc, 'interval', '5m'),
    restartCommand,
    logLevel,
    healthCheckTries: int(doc, 'health_check_tries', '', 3, 1, 10),
    healthCheckDelayMs: duration(doc, 'health_check_delay', '5s', 0),
    maxBootAttempts: int(doc, 'max_boot_attempts', '', 3, 1, 100),
    downloadAttempts: int(doc, 'download_attempts', '', 5, 1, 100),
    retryBaseMs: duration(doc, 'retry_base', '2s'),
    retryMaxMs: duration(doc, 'retry_max', '10m'),
    diskFullBackoffMs: duration(doc, 'disk_full_backoff', '5m', 5 * 60_000),
    restartCooldownMs: duration(doc, 'restart_cooldown', '1h', 0),
    minThroughputBytesPerSecond: int(doc, 'min_throughput_bps', '', 512, 0),
    throughputWindowMs: duration(doc, 'throughput_window', '60s', 100),
    downloadDeadlineMs: duration(doc, 'download_deadline', '2h'),
    requestTimeoutMs: duration(doc, 'request_timeout', '30s'),
    checkpointBytes: int(doc, 'checkpoint_kb', '', 256, 4, 1 << 20) * 1024,
  };
  if (config.retryMaxMs < config.retryBaseMs) throw new ConfigError('retry_max', 'must not be shorter than retry_base');
  return Object.freeze(config);
}

import { parseTrackKey, trackKey } from '../src/shared/artifact-key.js';
import { DELTA_FORMATS, type DeltaFormat } from '../src/shared/delta-formats.js';
import { LOG_LEVELS } from '../src/shared/logger.js';
import { attributesJson, parseAttributes } from '../src/shared/targeting/attributes.js';
import {
  bytesIn, durationMs, int, leaf, oneOf, Problem, readRequiredText, readText, requiredText, resolvedAgainst, section,
} from '../src/shared/config/schema-kit.js';
import type { z } from 'zod';

// Every key of the agent's configuration, declared once with its default, bounds, unit and
// the line docs/agent.md shows (kept in step by test/agent/config-docs.test.ts). Checks that
// span keys (primary vs the URLs, retry_max vs retry_base) are in config.ts.

function url(key: string, scheme: 'http:' | 'coap:', meaning: string, shown: string) {
  const allowed = scheme === 'http:' ? ['http:', 'https:'] : ['coap:'];
  return leaf(key, { default: shown, meaning }, (value) => {
    const text = readText(value);
    if (text === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      throw new Problem(`must be a URL like ${scheme}//127.0.0.1:${scheme === 'http:' ? 8080 : 5683} (got ${JSON.stringify(text)})`);
    }
    if (!allowed.includes(parsed.protocol)) throw new Problem(`must use ${allowed.join(' or ')} (got ${parsed.protocol})`);
    if ((parsed.pathname !== '/' && parsed.pathname !== '') || parsed.search || parsed.hash) throw new Problem('must be a base address without a path');
    return text.replace(/\/+$/, '');
  });
}

function hexKey(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !/^[0-9a-f]{64}$/.test(value)) {
    throw new Problem('must be 64 lowercase hex characters (as printed by "updater keygen")');
  }
  return value;
}

export function agentSchema(base: string) {
  return section('', {
    deviceId: leaf('device_id', { default: 'required', meaning: 'sent in heartbeats and reports; at most 128 characters' }, (value) => {
      const id = readRequiredText(value);
      if (id.length > 128) throw new Problem('must be at most 128 characters');
      return id;
    }),
    artifact: leaf('artifact', { default: 'server default', meaning: 'track key `name` or `name/os/arch`, checked like the server checks it' }, (value) => {
      const text = readText(value);
      if (text === undefined) return '';
      try {
        return trackKey(parseTrackKey(text));
      } catch (err) {
        throw new Problem((err as Error).message.replace(/^artifact /, ''));
      }
    }),
    publicKey: leaf('public_key', {
      default: 'required without `root_public_key`', meaning: 'the server\'s signing key (Ed25519, 64 lowercase hex characters); with `root_public_key`, the key trusted until a certified one is',
    }, (value) => hexKey(value)),
    rootPublicKey: leaf('root_public_key', {
      default: '(none)', meaning: 'an offline root key (64 hex): the agent trusts the signing key it certified with the highest serial (`GET /keys`), so the signing key can rotate',
    }, (value) => hexKey(value)),
    httpUrl: url('http_url', 'http:', 'base address, no path; `http://` or `https://`', 'required when `primary: http`'),
    caFile: leaf('ca_file', {
      default: 'none (Node\'s built-in roots)',
      meaning: 'PEM file of the CA certificates an `https://` server\'s chain must end in (replacing the built-in roots); read at start; a server it did not sign fails with `AGENT_TRANSPORT_FAILED`',
    }, (value) => {
      const text = readText(value);
      return text === undefined ? undefined : resolvedAgainst(base, text);
    }),
    identityKeyFile: leaf('identity_key_file', {
      default: '(none: no device token)',
      meaning: 'the device\'s Ed25519 key (PKCS#8 PEM), created with mode 0600 at first start when absent; with it the agent authenticates (`POST /auth`) and sends its token on every request; relative to the configuration file',
    }, (value) => {
      const text = readText(value);
      return text === undefined ? undefined : resolvedAgainst(base, text);
    }),
    coapUrl: url('coap_url', 'coap:', 'base address `coap://host:port`', '(none)'),
    primary: leaf('primary', { default: '`http` when `http_url` is set', meaning: 'the transport every operation starts with' }, (value) => {
      if (value !== undefined && value !== 'http' && value !== 'coap') throw new Problem('must be http or coap');
      return value as 'http' | 'coap' | undefined;
    }),
    slotDir: leaf('slot_dir', { default: 'required', meaning: 'the slot directory; relative to the configuration file' }, (value) =>
      resolvedAgainst(base, readRequiredText(value))),
    intervalMs: durationMs('interval', { default: '5m', meaning: 'time between heartbeats when nothing happened' }),
    restartCommand: requiredText('restart_command', {
      meaning: 'run through `/bin/sh -c` after the swap and after a rollback; must exit 0', hint: 'the command that restarts into the new binary',
    }),
    deltaFormats: leaf('delta_formats', {
      default: '`[bsdiff-lzma, bsdiff40]`',
      meaning: 'the patch formats the agent asks for, most preferred first (docs/protocol.md, "Patch formats"); `[bsdiff40]` restricts it to the BSDIFF40 of every server',
    }, (value): DeltaFormat[] => {
      if (value === undefined || value === null) return [...DELTA_FORMATS].reverse();
      if (!Array.isArray(value) || value.length === 0) throw new Problem(`must be a non-empty list of ${DELTA_FORMATS.join(', ')}`);
      for (const name of value) if (!(DELTA_FORMATS as readonly unknown[]).includes(name)) throw new Problem(`names ${JSON.stringify(name)}; the agent applies ${DELTA_FORMATS.join(', ')}`);
      return [...new Set(value as DeltaFormat[])];
    }),
    attributes: leaf('attributes', {
      default: '(none: the server keeps what it has)',
      meaning: 'what the device says of itself, sent with every heartbeat: at most 32 `name: text` entries, names of `[A-Za-z0-9_.-]` (1–64), text at most 128 characters; `tz` names the zone of a window in device time (docs/rollouts.md)',
    }, (value): Record<string, string> | undefined => {
      if (value === undefined || value === null) return undefined;
      try {
        return attributesJson(parseAttributes(value));
      } catch (err) {
        throw new Problem((err as Error).message.replace(/^attributes(?:\.(\S+))? /, (_, key?: string) => (key ? `entry ${key} ` : '')));
      }
    }),
    logLevel: oneOf('log_level', LOG_LEVELS, { default: 'info', meaning: 'trace, debug, info, warn, error' }),
    healthCheckTries: int('health_check_tries', { default: 3, min: 1, max: 10, meaning: 'boot-phase health-check heartbeats before a rollback (spec: up to 3)' }),
    healthCheckDelayMs: durationMs('health_check_delay', { default: '5s', minMs: 0, meaning: 'pause between two health-check tries' }),
    maxBootAttempts: int('max_boot_attempts', { default: 3, min: 1, max: 100, meaning: 'agent starts with an unconfirmed slot before it rolls back' }),
    downloadAttempts: int('download_attempts', { default: 5, min: 1, max: 100, meaning: 'tries of one transfer within a cycle, each resuming from the durable offset' }),
    retryBaseMs: durationMs('retry_base', { default: '2s', meaning: 'first backoff (exponential, with jitter) between download tries and between failed cycles' }),
    retryMaxMs: durationMs('retry_max', { default: '10m', meaning: 'longest backoff; not shorter than `retry_base`' }),
    diskFullBackoffMs: durationMs('disk_full_backoff', { default: '5m', minMs: 5 * 60_000, meaning: 'backoff floor after ENOSPC; values below 5 minutes are refused' }),
    restartCooldownMs: durationMs('restart_cooldown', { default: '1h', minMs: 0, meaning: 'persisted pause of updates after `restart_command` failed' }),
    minThroughputBytesPerSecond: int('min_throughput_bps', {
      default: 512, min: 0, meaning: 'a transfer averaging fewer bytes per second over one window is aborted (0 disables)',
    }),
    throughputWindowMs: durationMs('throughput_window', { default: '60s', minMs: 100, meaning: 'the window of that average' }),
    downloadDeadlineMs: durationMs('download_deadline', { default: '2h', meaning: 'hard limit of one download try' }),
    requestTimeoutMs: durationMs('request_timeout', { default: '30s', meaning: 'limit of one heartbeat or report' }),
    checkpointBytes: bytesIn('KB', 'checkpoint_kb', { default: 256, min: 4, max: 1 << 20, meaning: 'bytes between durable download checkpoints' }),
  });
}

/** The parsed agent document, before the checks that span keys (config.ts). */
export type AgentDocument = z.output<ReturnType<typeof agentSchema>['schema']>;

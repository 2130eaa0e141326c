import { z } from 'zod';
import { engineOf } from '../database/location.js';
import { LOG_LEVELS } from '../logger.js';
import {
  bool, bytesIn, durationMs, hostPort, int, leaf, oneOf, optionalText, Problem, readRequiredText, readText, requiredText, resolvedAgainst, section, textList, type Field,
} from './schema-kit.js';
import { isWebhookEventType, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../webhooks/events.js';

// Every key of `updater serve --config` is declared here, once: YAML name, default, bounds,
// unit (converted to bytes or milliseconds here and nowhere else) and the line of
// docs/configuration.md (kept in step by test/tools/config-docs.test.ts). The Config type
// is derived from this table. Checks that span keys (admin.token vs token_file, tracks,
// default_artifact, readable files) are in load.ts. How to add a key: docs/architecture.md.

const MB = 1024 * 1024;

function readWebhookUrl(value: unknown): string {
  const text = readRequiredText(value);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Problem('is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Problem('must be an http:// or https:// URL');
  if (url.username !== '' || url.password !== '') throw new Problem('must not carry credentials (the signature authenticates the sender)');
  return text;
}

function readWebhookEvents(value: unknown): WebhookEventType[] {
  if (!Array.isArray(value) || value.length === 0) throw new Problem('must be a non-empty list of event types');
  for (const [i, type] of value.entries()) {
    if (!isWebhookEventType(type)) throw new Problem(`names ${JSON.stringify(type)} (item ${i}), which is not an event type (one of ${WEBHOOK_EVENT_TYPES.join(', ')})`);
  }
  if (new Set(value).size !== value.length) throw new Problem('names an event type twice');
  return value as WebhookEventType[];
}

/** Delta engines: our own (native/delta) and bsdiff-node, kept as the fallback. */
export const DELTA_ENGINES = ['native', 'bsdiff-node'] as const;
export type DeltaEngine = (typeof DELTA_ENGINES)[number];

/** One entry of `artifacts` (and the legacy `target`, which has only version and binary). */
function trackFields(base: string) {
  return {
    name: optionalText('name', { meaning: 'track name' }),
    os: optionalText('os', { meaning: 'operating system' }),
    arch: optionalText('arch', { meaning: 'architecture' }),
    version: requiredText('version', { meaning: 'version told to devices' }),
    binary: path(base, requiredText('binary', { meaning: 'server-side path of the binary' })),
  };
}

/** A text key holding a path, resolved against the directory of the configuration file. */
function path<T extends string | undefined>(base: string, field: Field<T>): Field<T> {
  return { ...field, schema: field.schema.transform((text) => (text === undefined ? text : resolvedAgainst(base, text)) as T) };
}

export function configSchema(base: string) {
  const track = trackFields(base);
  const { name: _name, os: _os, arch: _arch, ...targetOnly } = track;
  return section('', {
    listen: section('listen', {
      http: hostPort('http', { default: '127.0.0.1:8080', meaning: 'HTTP listener, `host:port`' }),
      https: hostPort('https', { meaning: 'HTTPS listener for devices, `host:port`; needs `tls`' }),
      admin: hostPort('admin', {
        meaning: 'the admin API\'s own listener (plain HTTP, `host:port`); when set, `/admin/*` is not served on `listen.http` or `listen.https`',
      }),
      coap: hostPort('coap', { meaning: 'CoAP listener (UDP `host:port`); leave out to run without CoAP' }),
    }),
    // Present exactly when listen.https is (load.ts checks both files and that they match).
    tls: absentUnlessGiven(section('tls', {
      certFile: path(base, requiredText('cert_file', {
        shown: 'required with `listen.https`', meaning: 'PEM certificate chain of the HTTPS listener (server certificate first)',
      })),
      keyFile: path(base, requiredText('key_file', {
        shown: 'required with `listen.https`', meaning: 'PEM private key of that certificate, unencrypted (PKCS#8 or the traditional form)',
      })),
      clientCaFile: path(base, optionalText('client_ca_file', {
        meaning: 'PEM certificate(s) of the CA that signs device certificates: on `listen.https` a client certificate it signed stands in for the device token, its subject CN being the device id (mutual TLS); needs `devices.auth: on` ([operations.md](operations.md#device-certificates-mutual-tls))',
      })),
    })),
    metrics: section('metrics', {
      listener: oneOf('listener', ['public', 'admin'] as const, {
        default: 'public', meaning: 'where `GET /metrics` is served: `public` on the device listeners (`listen.http`, `listen.https`), `admin` on `listen.admin` only (it names tracks, running version hashes and rollout state: [operations.md](operations.md#metrics-on-the-admin-listener))',
      }),
    }),
    signing: section('signing', {
      privateKeyFile: path(base, requiredText('private_key_file', {
        meaning: 'Ed25519 private key, PKCS#8 PEM (written by `updater keygen`, or `openssl genpkey -algorithm ed25519`); key files in the earlier hex format are still read', hint: 'create one with "updater keygen --out FILE"',
      })),
      releaseTtlMs: durationMs('release_ttl', {
        default: '24h', minMs: 2000,
        meaning: 'life of a release statement (`expires_at` − `issued_at`, whole seconds); each is signed again once 35 % of it has passed, always before half of it has ([protocol.md](protocol.md#release-statements))',
      }),
      certificateFile: path(base, optionalText('certificate_file', {
        meaning: 'the signing key\'s certificate from `updater certify`, served at `GET /keys`; its `public_key` must be the signing key\'s ([operations.md](operations.md))',
      })),
    }),
    admin: section('admin', {
      token: leaf('token', { default: 'one of the two is required', meaning: 'Bearer token of the admin API, at least 32 characters, no white space' },
        (value) => {
          if (value !== undefined && typeof value !== 'string') throw new Problem('must be a string');
          return value;
        }),
      tokenFile: path(base, optionalText('token_file', { shown: 'one of the two is required', meaning: 'a file holding that token (surrounding white space ignored)' })),
      authFailureBurst: int('auth_failure_burst', { default: 10, min: 1, meaning: 'capacity of the global bucket of failed authentications' }),
      authFailureRefillPerSecond: int('auth_failure_refill_per_second', { default: 1, min: 1, meaning: 'its refill rate' }),
      auditMaxAgeMs: durationMs('audit_max_age', {
        default: '2160h', minMs: 1000, zeroMeansOff: true, meaning: 'audit log rows older than this are deleted on the retention schedule (`retention.interval`); `0` keeps all ([operations.md](operations.md#the-audit-log))',
      }),
      maxUploadBytes: bytesIn('MB', 'max_upload_mb', { default: 4096, min: 1, meaning: 'largest body of `PUT /admin/binaries` (an upload into the store); larger ones are refused with 413' }),
    }),
    store: section('store', {
      dir: path(base, requiredText('dir', { meaning: 'the content-addressed store (`binaries/`, `deltas/`, `work/`)' })),
      // Directories the admin API may publish from (besides the configured artifacts' own).
      publishRoots: paths(base, textList('publish_roots', {
        meaning: 'directories the admin API may publish binaries from (besides each configured artifact\'s directory); symlinks resolved; the signing key, token file, state file, configuration, TLS key, database, webhook secret files and `store.dir` are refused always, under any name (hard links included)',
      })),
      stateFile: path(base, optionalText('state_file', { meaning: 'persistence of tracks published through the admin API; refused beside a `postgres://` database, which holds the tracks then ([scaling.md](scaling.md))' })),
      targetCacheBytes: bytesIn('MB', 'target_cache_mb', { default: 256, min: 0, meaning: 'byte budget of cached delta targets (0 disables)' }),
      hotDeltaCacheBytes: bytesIn('MB', 'hot_delta_cache_mb', { default: 64, min: 0, meaning: 'byte budget of the hot transfer cache, deltas and full files together' }),
      deltaConcurrency: int('delta_concurrency', { default: 2, min: 1, max: 64, meaning: 'concurrent delta generations (diff threads); in a cluster it also sizes the store-keeper\'s PostgreSQL pool at `delta_concurrency + 2` connections: one per generation (each holds its file\'s advisory lock while it runs) and two more for removal announcements and lock attempts on files another replica is generating, besides its one LISTEN connection ([scaling.md](scaling.md))' }),
      deltaEngine: oneOf('delta_engine', DELTA_ENGINES, {
        default: 'native',
        meaning: '`native`: our engine (libdivsufsort suffix array, streamed, in a child process; about 5 × source + target + 40 MiB per generation); `bsdiff-node`: the previous library, kept as a fallback (about 21 × the larger input, in the diff thread)',
      }),
      deltaMaxSourceBytes: bytesIn('MB', 'delta_max_source_mb', { default: 512, min: 0, meaning: 'size cap on either binary of a pair; 0 disables' }),
      fullCompressionLevel: int('full_compression_level', {
        default: 19, min: 1, max: 22, meaning: 'zstd level of `{hash}.full.zst`; high levels are slow (level 19 takes seconds per MiB on one core), so lower it for very large images that must be ready sooner',
      }),
      watchSettleMs: durationMs('watch_settle', { default: '5s', minMs: 100, meaning: 'how long a watched binary must stay unchanged before it is republished' }),
    }),
    manifest: section('manifest', {
      cacheSize: int('cache_size', { default: 10_000, min: 0, meaning: 'entries of the signed-manifest LRU' }),
      chunkSize: int('chunk_size', { default: 65_536, min: 16, max: 16 * MB, meaning: '`chunk_size` told to devices (a Range length or Block2 size)' }),
      retryAfterSeconds: seconds(durationMs('retry_after', { default: '30s', minMs: 1000, meaning: '`retry_after` of a pending answer, in whole seconds on the wire' })),
    }),
    // node-coap's duplicate-detection cache is unbounded in practice at its 32 MiB default
    // (each entry also pins a retransmission sender): it is a budget of its own (docs/coap.md).
    coap: section('coap', {
      dedupCacheBytes: int('dedup_cache_bytes', { default: MB, min: 4096, max: 1024 * MB, meaning: 'memory budget of the CoAP duplicate-detection cache: each answer held counts its bytes and its bookkeeping (docs/coap.md)' }),
      maxInFlight: int('max_in_flight', { default: 1024, min: 1, max: 1_000_000, meaning: 'CoAP requests handled at once; more are answered 5.03' }),
    }),
    allowFullDownload: bool('allow_full_download', { default: false, meaning: 'full mode for devices whose binary the store does not hold' }),
    logLevel: oneOf('log_level', LOG_LEVELS, { default: 'info', meaning: '`trace`, `debug`, `info`, `warn` or `error`' }),
    retention: section('retention', {
      enabled: bool('enabled', { default: false, meaning: 'retention sweeper on or off' }),
      intervalMs: durationMs('interval', { default: '6h', minMs: 1000, meaning: 'time between sweeps' }),
      historyDepth: int('history_depth', { default: 3, min: 0, max: 1000, meaning: 'superseded targets kept per track as delta sources' }),
      deltaMaxAgeMs: durationMs('delta_max_age', { default: '720h', minMs: 1000, meaning: 'maximum age of a derived file' }),
      deltasMaxTotalBytes: bytesIn('MB', 'deltas_max_total_mb', { default: 0, min: 0, meaning: 'size cap of the deltas directory; 0 disables' }),
      collectOrphanBinaries: bool('collect_orphan_binaries', { default: false, meaning: 'opt-in for binary collection' }),
      orphanBinaryMinAgeMs: durationMs('orphan_binary_min_age', { default: '24h', minMs: 0, meaning: 'grace period before an unreferenced binary may go' }),
    }),
    artifacts: list(section('artifacts', track), {
      default: '`[]`', meaning: 'tracks: `name`, `os`, `arch`, `version`, `binary` (a server-side path)',
    }),
    target: optional(section('target', targetOnly), {
      default: '(none)', meaning: 'legacy single-target form `{version, binary}`, folded into a track named `default`; not together with `artifacts`',
    }),
    database: leaf('database', {
      default: '`updater.db` in `store.dir`',
      meaning: 'the fleet database: an SQLite file path, or a `postgres://user:password@host:port/db` URL ([fleet.md](fleet.md)); one that cannot be reached at start exits 2 naming `database`. A `postgres://` URL also makes the server a cluster replica: tracks, rollouts and coordination live there ([scaling.md](scaling.md))',
    }, (value) => {
      const text = readText(value);
      if (text === undefined) return undefined;
      if (text.trim() === '') throw new Problem('must be a file path or a postgres:// URL');
      if (/^postgres(ql)?:/i.test(text)) {
        // Only this spelling counts as PostgreSQL everywhere (engineOf, config.cluster): a URL
        // without `//` (postgres:u@db/x) or with a capitalised scheme would pass a URL parser
        // and then be opened as an SQLite file named like a URL, so it is refused here.
        if (engineOf(text) !== 'postgres') throw new Problem('is not a valid postgres:// URL (write postgres://user:password@host:port/db)');
        try {
          new URL(text);
        } catch {
          throw new Problem('is not a valid postgres:// URL');
        }
        return text;
      }
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) throw new Problem('must be a file path or a postgres:// URL (no other scheme is supported)');
      return resolvedAgainst(base, text);
    }),
    fleet: section('fleet', {
      enabled: bool('enabled', { default: true, meaning: 'the fleet inventory (the `fleet` actor and its database); `false` answers the fleet admin calls with `FLEET_DISABLED`' }),
      flushIntervalMs: durationMs('flush_interval', { default: '1s', minMs: 10, meaning: 'how often buffered heartbeats and reports are written, in one transaction' }),
      bufferBytes: bytesIn('MB', 'buffer_mb', {
        default: 16, min: 1, max: 64 * 1024, meaning: 'byte budget of records waiting to be written; when full, the oldest `last_seen`-only updates are dropped first',
      }),
      deviceMaxAgeMs: durationMs('device_max_age', { default: '2160h', minMs: 1000, zeroMeansOff: true, meaning: 'a device not seen for this long is deleted by fleet retention; `0` keeps all' }),
      reportMaxAgeMs: durationMs('report_max_age', { default: '720h', minMs: 1000, zeroMeansOff: true, meaning: 'reports older than this are deleted; `0` keeps all' }),
      reportBurst: int('report_burst', {
        default: 10, min: 0, max: 10_000, meaning: 'update reports one device may send at once; past it each must wait for `reports_per_minute` to refill and is refused with 429 / 4.29 `REPORT_RATE_LIMITED`, not stored, raising no webhook event; `0` turns the limit off ([operations.md](operations.md#report-rate-limit))',
      }),
      reportsPerMinute: int('reports_per_minute', { default: 6, min: 1, max: 60_000, meaning: 'how fast a device\'s allowance of reports refills' }),
      targetingIndexBytes: bytesIn('MB', 'targeting_index_mb', {
        default: 16, min: 1, max: 4096, meaning: 'budget of the tags and group filters each front-end holds to judge group steps at the heartbeat (about 130 bytes a tagged device); tagged devices past it are judged without their tags ([rollouts.md](rollouts.md))',
      }),
    }),
    devices: section('devices', {
      auth: leaf('auth', { default: '`off`', meaning: '`on`: every device request but `/auth`, `/health` and `/metrics` needs a device token ([protocol.md](protocol.md)); `off`: the open protocol' }, (value) => {
        const v = value ?? 'off';
        if (v === 'on' || v === true) return 'on' as const;
        if (v === 'off' || v === false) return 'off' as const;
        throw new Problem('must be on or off');
      }),
      enrollment: oneOf('enrollment', ['open', 'manual', 'preauthorized'] as const, {
        default: 'manual', meaning: 'how a new device key is taken: `open` at first contact, `manual` pending until an operator accepts it, `preauthorized` only for devices an operator added ([operations.md](operations.md))',
      }),
      tokenTtlMs: durationMs('token_ttl', { default: '24h', minMs: 60_000, meaning: 'how long a device token lives' }),
      maxPending: int('max_pending', { default: 10_000, min: 1, meaning: 'pending enrollments kept; beyond it a new device is refused with 429 / 4.29 `DEVICE_PENDING_FULL`' }),
      pendingTtlMs: durationMs('pending_ttl', {
        default: '24h', minMs: 60_000, meaning: 'how long a pending enrollment waits for an operator: past it, it no longer counts toward `max_pending` and the id enrolls anew, with any key ([operations.md](operations.md#enrolling-devices-devicesauth-on))',
      }),
    }),
    defaultArtifact: optionalText('default_artifact', {
      shown: 'inferred with one track', meaning: 'track key answering heartbeats that name no artifact; required with several tracks',
    }),
    webhooks: list(section('webhooks', {
      url: leaf('url', { default: 'required', meaning: 'where each event is POSTed: an `http://` or `https://` URL' }, readWebhookUrl),
      secretFile: path(base, requiredText('secret_file', { meaning: 'a file holding the HMAC-SHA256 key of `X-Updater-Signature` (surrounding white space ignored; at least 16 characters); read at start' })),
      events: leaf('events', { default: 'required', meaning: `the event types sent to it, a non-empty list of ${WEBHOOK_EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}` }, readWebhookEvents),
    }), {
      default: '`[]`', meaning: 'CloudEvents 1.0 notifications of changes: `url`, `secret_file`, `events` ([operations.md](operations.md), "Webhooks"); needs the fleet database (`fleet.enabled`)',
    }),
  });
}

/** The parsed document, before the checks that span keys (load.ts). */
export type ConfigDocument = z.output<ReturnType<typeof configSchema>['schema']>;

function paths(base: string, field: Field<string[]>): Field<string[]> {
  return { ...field, schema: field.schema.transform((list) => list.map((text) => resolvedAgainst(base, text))) };
}

function seconds(field: Field<number>): Field<number> {
  return { ...field, schema: field.schema.transform((ms) => Math.ceil(ms / 1000)) };
}

function list<T>(item: Field<T>, doc: { default: string; meaning: string }): Field<T[] | undefined> {
  const schema = z.array(item.schema, { error: 'must be a list' }).optional();
  return { key: item.key, schema, doc };
}

function optional<T>(inner: Field<T>, doc: { default: string; meaning: string }): Field<T | undefined> {
  // An absent map stays absent (a section alone would take its defaults).
  return { key: inner.key, schema: inner.schema.optional(), doc };
}

/** A section that stays absent when the YAML leaves it out; its keys keep their own docs rows. */
function absentUnlessGiven<T>(inner: Field<T>): Field<T | undefined> {
  return { ...inner, schema: inner.schema.optional() };
}

import type { LogLevel } from '../logger.js';

/** A track as the configuration declares it, with `binary` resolved to an absolute path. */
export interface ArtifactConfig {
  readonly key: string;
  readonly name: string;
  readonly os: string;
  readonly arch: string;
  readonly version: string;
  readonly binary: string;
}

/** The validated, frozen configuration every actor receives. Durations are milliseconds. */
export interface Config {
  readonly configPath: string;
  readonly listen: { readonly http: { host: string; port: number }; readonly coap?: { host: string; port: number } };
  /** The CoAP front-end's own budgets; used only when `listen.coap` is set. */
  readonly coap: { readonly dedupCacheBytes: number; readonly maxInFlight: number };
  readonly signing: { readonly privateKeyFile: string };
  readonly admin: {
    readonly token: string;
    /** Where the token was read from, when a file: never publishable. */
    readonly tokenFile?: string;
    readonly authFailureBurst: number;
    readonly authFailureRefillPerSecond: number;
  };
  readonly store: {
    readonly dir: string;
    readonly stateFile?: string;
    readonly targetCacheMb: number;
    readonly hotDeltaCacheMb: number;
    readonly deltaConcurrency: number;
    readonly deltaMaxSourceMb: number;
    readonly fullCompressionLevel: number;
    /** How long a watched binary must stay unchanged before it is republished. */
    readonly watchSettleMs: number;
    /** Absolute directories admin publishes may read from (symlinks resolved when checked). */
    readonly publishRoots: readonly string[];
  };
  readonly manifest: { readonly cacheSize: number; readonly chunkSize: number; readonly retryAfterSeconds: number };
  readonly allowFullDownload: boolean;
  readonly logLevel: LogLevel;
  readonly retention: {
    readonly enabled: boolean;
    readonly intervalMs: number;
    readonly historyDepth: number;
    readonly deltaMaxAgeMs: number;
    readonly deltasMaxTotalMb: number;
    readonly collectOrphanBinaries: boolean;
    readonly orphanBinaryMinAgeMs: number;
  };
  readonly artifacts: readonly ArtifactConfig[];
  readonly defaultArtifact?: string;
  /** An absolute SQLite file path, or a postgres:// URL. */
  readonly database: string;
  readonly fleet: {
    /** False: no fleet actor, no inventory (the admin fleet calls answer FLEET_DISABLED). */
    readonly enabled: boolean;
    readonly flushIntervalMs: number;
    readonly bufferMb: number;
    /** 0 keeps every device. */
    readonly deviceMaxAgeMs: number;
    /** 0 keeps every report. */
    readonly reportMaxAgeMs: number;
  };
}

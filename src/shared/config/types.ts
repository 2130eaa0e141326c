import type { ConfigDocument } from './schema.js';

// The Config type is derived from the schema (schema.ts): adding a key there adds it here.

/** A track as the configuration declares it, with `binary` resolved to an absolute path. */
export interface ArtifactConfig {
  readonly key: string;
  readonly name: string;
  readonly os: string;
  readonly arch: string;
  readonly version: string;
  readonly binary: string;
}

type DeepReadonly<T> = T extends readonly (infer U)[] ? readonly DeepReadonly<U>[] : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

/**
 * The validated, frozen configuration every actor receives. Durations are milliseconds
 * (`…Ms`), sizes bytes (`…Bytes`), whatever unit the YAML key is written in.
 */
export type Config = DeepReadonly<
  Omit<ConfigDocument, 'admin' | 'artifacts' | 'target' | 'defaultArtifact' | 'database'> & {
    configPath: string;
    /** `tokenFile`: where the token was read from, when a file (never publishable). */
    admin: Omit<ConfigDocument['admin'], 'token'> & { token: string };
    artifacts: ArtifactConfig[];
    defaultArtifact?: string;
    /** An absolute SQLite file path, or a postgres:// URL. */
    database: string;
    /**
     * Whether this server is a cluster replica: `database` is a PostgreSQL URL (docs/scaling.md).
     * Derived once when the configuration is loaded (load.ts), never written in the YAML.
     */
    cluster: boolean;
  }
>;

export { DELTA_ENGINES, type DeltaEngine } from './schema.js';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

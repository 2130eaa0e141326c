import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { parseDuration } from '../duration.js';

// Small readers for one YAML node each. Every failure names the full key path so an
// operator knows exactly what to fix (`store.delta_concurrency must be an integer >= 1`).

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'CONFIG_INVALID';
  constructor(readonly key: string, problem: string) {
    super(`${key} ${problem}`);
  }
}

export type Node = Record<string, unknown>;

export function isMap(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads a nested map; refuses keys the schema does not know (usually a typo). */
export function section(parent: Node, key: string, path: string, known: readonly string[]): Node {
  const value = parent[key];
  if (value === undefined || value === null) return {};
  if (!isMap(value)) throw new ConfigError(path, 'must be a map');
  refuseUnknown(value, path, known);
  return value;
}

export function refuseUnknown(node: Node, path: string, known: readonly string[]): void {
  for (const key of Object.keys(node)) {
    if (!known.includes(key)) {
      const where = path ? `${path}.${key}` : key;
      throw new ConfigError(where, `is not a known key (known here: ${known.join(', ')})`);
    }
  }
}

export function int(node: Node, key: string, path: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = node[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(`${path}.${key}`.replace(/^\./, ''), `must be an integer ${range}`);
  }
  return value;
}

export function bool(node: Node, key: string, path: string, fallback: boolean): boolean {
  const value = node[key] ?? fallback;
  if (typeof value !== 'boolean') throw new ConfigError(`${path}.${key}`.replace(/^\./, ''), 'must be true or false');
  return value;
}

export function str(node: Node, key: string, path: string, fallback?: string): string | undefined {
  const value = node[key] ?? fallback;
  if (value === undefined) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw new ConfigError(`${path}.${key}`.replace(/^\./, ''), 'must be a string');
  }
  const text = String(value);
  if (text.length === 0) throw new ConfigError(`${path}.${key}`.replace(/^\./, ''), 'must not be empty');
  return text;
}

/** A list of non-empty strings; [] when absent. */
export function strList(node: Node, key: string, path: string): string[] {
  const value = node[key];
  if (value === undefined || value === null) return [];
  const where = `${path}.${key}`.replace(/^\./, '');
  if (!Array.isArray(value)) throw new ConfigError(where, 'must be a list of strings');
  return value.map((item, i) => {
    if (typeof item !== 'string' || item.length === 0) throw new ConfigError(`${where}[${i}]`, 'must be a non-empty string');
    return item;
  });
}

export function duration(node: Node, key: string, path: string, fallback: string, minMs = 1): number {
  const value = node[key] ?? fallback;
  const ms = parseDuration(value);
  if (ms === undefined || ms < minMs) {
    throw new ConfigError(`${path}.${key}`, `must be a duration like 90s, 6h or 720h (got ${JSON.stringify(value)})`);
  }
  return ms;
}

/** `host:port` or `[v6]:port`. */
export function hostPort(value: unknown, key: string): { host: string; port: number } {
  const match = typeof value === 'string' ? /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(value) : null;
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) throw new ConfigError(key, `must be host:port (got ${JSON.stringify(value)})`);
  return { host: (match[1] ?? match[2])!, port };
}

/** Reads a YAML configuration file; a missing file or bad YAML is a ConfigError on --config. */
export function readYamlFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError('--config', `cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    throw new ConfigError('--config', `${path} is not valid YAML: ${(err as Error).message}`);
  }
}

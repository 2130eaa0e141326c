import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

// A configuration document: the YAML file read as data, and the error that names the key at fault
// (`store.delta_concurrency must be an integer from 1 to 64`); the CLI exits 2 on it.

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'CONFIG_INVALID';
  constructor(readonly key: string, problem: string) {
    super(`${key} ${problem}`);
  }
}

/** Reads a file a configuration key names; failing, a ConfigError on that key. */
export function readTextFile(path: string, key: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(key, `cannot read ${path}: ${(err as Error).message}`);
  }
}

/** Reads a YAML configuration file; a missing file or bad YAML is a ConfigError on --config. */
export function readYamlFile(path: string): unknown {
  const text = readTextFile(path, '--config');
  try {
    return parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    throw new ConfigError('--config', `${path} is not valid YAML: ${(err as Error).message}`);
  }
}

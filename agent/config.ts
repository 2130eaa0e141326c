import { dirname, resolve } from 'node:path';
import { ConfigError, readYamlFile } from '../src/shared/config/document.js';
import { parseDocument } from '../src/shared/config/schema-kit.js';
import { agentSchema, type AgentDocument } from './config-schema.js';

export { ConfigError } from '../src/shared/config/document.js';

// The agent's YAML configuration, validated once and frozen. Its keys, defaults and units are
// declared in config-schema.ts (the same mechanism as the server's); this file adds the checks
// that span keys.

export type TransportName = 'http' | 'coap';

/** The validated, frozen agent configuration. Durations are milliseconds, sizes bytes. */
export type AgentConfig = Readonly<Omit<AgentDocument, 'primary'> & { configPath: string; primary: TransportName }>;

export function loadAgentConfigFile(path: string): AgentConfig {
  return validateAgentConfig(readYamlFile(path), resolve(path));
}

export function validateAgentConfig(doc: unknown, configPath: string): AgentConfig {
  const { httpUrl, coapUrl, primary: chosen, ...rest } = parseDocument(agentSchema(dirname(configPath)), doc);
  const primary = chosen ?? (httpUrl ? 'http' : 'coap');
  if (primary === 'http' && !httpUrl) throw new ConfigError('http_url', 'is required when primary is http');
  if (primary === 'coap' && !coapUrl) throw new ConfigError('coap_url', 'is required when primary is coap');
  if (rest.retryMaxMs < rest.retryBaseMs) throw new ConfigError('retry_max', 'must not be shorter than retry_base');
  const config: AgentConfig = {
    configPath,
    ...rest,
    ...(httpUrl ? { httpUrl } : {}),
    ...(coapUrl ? { coapUrl } : {}),
    primary,
  };
  return Object.freeze(config);
}

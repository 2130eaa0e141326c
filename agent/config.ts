import { dirname, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import { ConfigError, readTextFile, readYamlFile } from '../src/shared/config/document.js';
import { parseDocument } from '../src/shared/config/schema-kit.js';
import { agentSchema, type AgentDocument } from './config-schema.js';

export { ConfigError } from '../src/shared/config/document.js';

// The agent's YAML configuration, validated once and frozen. Its keys, defaults and units are
// declared in config-schema.ts (the same mechanism as the server's); this file adds the checks
// that span keys.

export type TransportName = 'http' | 'coap';

/** The validated, frozen agent configuration. Durations are milliseconds, sizes bytes. */
export type AgentConfig = Readonly<Omit<AgentDocument, 'primary' | 'caFile'> & {
  configPath: string;
  primary: TransportName;
  /** PEM certificates the HTTPS server's chain must end in, instead of Node's built-in roots. */
  caCertificates?: string;
}>;

export function loadAgentConfigFile(path: string): AgentConfig {
  return validateAgentConfig(readYamlFile(path), resolve(path));
}

export function validateAgentConfig(doc: unknown, configPath: string): AgentConfig {
  const { httpUrl, coapUrl, caFile, primary: chosen, ...rest } = parseDocument(agentSchema(dirname(configPath)), doc);
  const ca = caFile === undefined ? undefined : caCertificates(caFile, httpUrl);
  const primary = chosen ?? (httpUrl ? 'http' : 'coap');
  if (primary === 'http' && !httpUrl) throw new ConfigError('http_url', 'is required when primary is http');
  if (primary === 'coap' && !coapUrl) throw new ConfigError('coap_url', 'is required when primary is coap');
  if (rest.retryMaxMs < rest.retryBaseMs) throw new ConfigError('retry_max', 'must not be shorter than retry_base');
  if (!rest.publicKey && !rest.rootPublicKey) throw new ConfigError('public_key', 'is required (or root_public_key, to follow a certified signing key)');
  const config: AgentConfig = {
    configPath,
    ...rest,
    ...(httpUrl ? { httpUrl } : {}),
    ...(ca ? { caCertificates: ca } : {}),
    ...(coapUrl ? { coapUrl } : {}),
    primary,
  };
  return Object.freeze(config);
}

/** The CA file is read and parsed now, so a wrong path fails the start and not the first heartbeat. */
function caCertificates(path: string, httpUrl: string | undefined): string {
  if (!httpUrl?.startsWith('https:')) throw new ConfigError('ca_file', 'needs an https:// http_url (it verifies the HTTPS server)');
  const pem = readTextFile(path, 'ca_file');
  try {
    createSecureContext({ ca: pem });
  } catch (err) {
    throw new ConfigError('ca_file', `${path} holds no usable PEM certificate: ${(err as Error).message}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError('ca_file', `${path} holds no PEM certificate`);
  return pem;
}

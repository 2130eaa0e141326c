import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { agentSchema } from '../agent/config-schema.js';
import { configSchema } from '../src/shared/config/schema.js';
import { docTable } from '../src/shared/config/schema-kit.js';

// The key tables of docs/configuration.md and docs/agent.md come from the schemas. `npm run
// docs:config` rewrites them; test/tools/config-docs.test.ts fails while a table is out of step.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BEGIN = '<!-- keys: generated from the schema by `npm run docs:config`; edit the schema, not this table -->';
const END = '<!-- end of generated keys -->';

export const CONFIG_DOCS = [
  { file: 'docs/configuration.md', schema: 'src/shared/config/schema.ts', table: () => docTable(configSchema('/')) },
  { file: 'docs/agent.md', schema: 'agent/config-schema.ts', table: () => docTable(agentSchema('/')) },
] as const;

/** The file's text with its generated table replaced by the schema's. */
export function withTable(text: string, table: string, file: string): string {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${file} has no generated-keys markers`);
  return `${text.slice(0, begin + BEGIN.length)}\n${table}\n${text.slice(end)}`;
}

export function readDoc(file: string): string {
  return readFileSync(`${ROOT}${file}`, 'utf8');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const doc of CONFIG_DOCS) {
    const text = readDoc(doc.file);
    const next = withTable(text, doc.table(), doc.file);
    if (next !== text) writeFileSync(`${ROOT}${doc.file}`, next);
    process.stdout.write(`${doc.file}: ${next === text ? 'up to date' : 'rewritten'}\n`);
  }
}

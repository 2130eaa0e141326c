import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { roleDocTable } from '../src/shared/admin-roles.js';
import { readDoc } from './config-docs.js';

// The role table of docs/operations.md comes from ADMIN_ROUTE_ROLES, the table the admin routes
// check. `npm run docs:roles` rewrites it; test/tools/roles-docs.test.ts fails while it is out of step.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const ROLES_DOC = 'docs/operations.md';
const BEGIN = '<!-- roles: generated from src/shared/admin-roles.ts by `npm run docs:roles`; edit that table, not this one -->';
const END = '<!-- end of generated roles -->';

/** The file's text with its generated role table replaced by the current one. */
export function withRoleTable(text: string): string {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${ROLES_DOC} has no generated-roles markers`);
  return `${text.slice(0, begin + BEGIN.length)}\n${roleDocTable()}\n${text.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = readDoc(ROLES_DOC);
  const next = withRoleTable(text);
  if (next !== text) writeFileSync(`${ROOT}${ROLES_DOC}`, next);
  process.stdout.write(`${ROLES_DOC}: ${next === text ? 'up to date' : 'rewritten'}\n`);
}

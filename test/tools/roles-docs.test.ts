import t from 'tap';
import { readDoc } from '../../tools/config-docs.js';
import { ROLES_DOC, withRoleTable } from '../../tools/roles-docs.js';

// The role table in the docs is the one the admin routes check.
t.test(`${ROLES_DOC} shows the role of every admin route, as the server checks it`, async (t) => {
  const text = readDoc(ROLES_DOC);
  t.equal(withRoleTable(text), text, 'run "npm run docs:roles" after changing src/shared/admin-roles.ts');
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import t from 'tap';
import { REPO_ROOT } from '../helpers/server.js';

// The lint rule that refuses import cycles (lint/no-cycle.js, issue 37): a type-only cycle
// of two files is refused from both ends, a chain that does not come back is not, and neither is
// a lazy import().

const { default: noCycle } = await import(pathToFileURL(join(REPO_ROOT, 'lint', 'no-cycle.js')).href);

t.test('an import cycle is refused, type-only ones included; a chain and a lazy import are not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'no-cycle-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'routes.ts': "import { auth } from './auth-route.js';\nexport type Handler = () => void;\nexport const all = [auth];\n",
    'auth-route.ts': "import type { Handler } from './routes.js';\nexport const auth: Handler = () => undefined;\n",
    'a.ts': "import { b } from './b.js';\nexport const a = b;\n",
    'b.ts': "export const b = 1;\nexport const later = () => import('./a.js');\n",
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const linter = new Linter({ cwd: dir });
  const config = [{
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser as any },
    plugins: { local: { rules: { 'no-cycle': noCycle } } },
    rules: { 'local/no-cycle': 'error' as const },
  }];
  const problems = (name: string) => linter.verify(files[name]!, config as any, { filename: join(dir, name) }).map((m) => m.message);
  t.match(problems('routes.ts'), [/^Import cycle: routes\.ts → auth-route\.ts → routes\.ts/], 'the importing end is refused');
  t.match(problems('auth-route.ts'), [/^Import cycle: auth-route\.ts → routes\.ts → auth-route\.ts/], 'and the type-only end');
  t.same(problems('a.ts'), [], 'a chain that comes back only through import() is no cycle');
  t.same(problems('b.ts'), [], 'nor is the lazy import itself');
});

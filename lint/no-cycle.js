// An ESLint rule that refuses an import cycle (issue 37): a module that, through its relative
// imports (type-only imports and re-exports included), comes back to itself. A cycle makes the
// load order decide what a module sees at start, and ties two files that should each be
// readable alone. eslint-plugin-import-x has such a rule, but this needs no dependency: the
// relative imports of a TypeScript file are read with one regular expression, each file once per
// lint run. Dynamic `import()` is left out: it is how a command loads what it needs lazily.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';

const STATIC_IMPORT = /(?:^|\n)\s*(?:import|export)\s(?:[^'";]*?\sfrom\s+)?'(\.{1,2}\/[^']+)'/g;
const graph = new Map();

/** The source file a relative specifier names (`./x.js` is `./x.ts` in the sources). */
function resolveSpecifier(from, specifier) {
  const target = resolve(dirname(from), specifier);
  const ts = target.replace(/\.js$/, '.ts');
  if (existsSync(ts)) return ts;
  return existsSync(target) ? target : undefined;
}

function importsOf(file) {
  let found = graph.get(file);
  if (found) return found;
  found = [];
  graph.set(file, found);
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return found;
  }
  for (const m of text.matchAll(STATIC_IMPORT)) {
    const target = resolveSpecifier(file, m[1]);
    if (target) found.push(target);
  }
  return found;
}

/** A path of imports from `start` back to `home`, or undefined. */
function pathBack(start, home) {
  const seen = new Set();
  const stack = [[start, [start]]];
  while (stack.length > 0) {
    const [file, path] = stack.pop();
    if (file === home) return path;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const next of importsOf(file)) stack.push([next, [...path, next]]);
  }
  return undefined;
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'Refuses an import that leads, through relative imports, back to the importing file.' },
    schema: [],
  },
  create(context) {
    const home = resolve(context.filename);
    const root = context.cwd;
    const check = (node) => {
      const specifier = node.source?.value;
      if (typeof specifier !== 'string' || !specifier.startsWith('.')) return;
      const target = resolveSpecifier(home, specifier);
      if (!target) return;
      const back = pathBack(target, home);
      if (back) {
        const names = [home, ...back].map((f) => relative(root, f));
        context.report({ node, message: `Import cycle: ${names.join(' → ')}. Move what both need into a third module.` });
      }
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check };
  },
};

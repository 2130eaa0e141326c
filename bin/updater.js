#!/usr/bin/env node
// Thin launcher: the TypeScript sources are compiled to dist/ by `npm install` (prepare).
import { main } from '../dist/src/cli.js';

main(process.argv.slice(2)).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => {
    process.stderr.write(`updater: ${err && err.message ? err.message : err}\n`);
    process.exitCode = 1;
  },
);

import t from 'tap';
import { CONFIG_DOCS, readDoc, withTable } from '../../tools/config-docs.js';
import { docRows } from '../../src/shared/config/schema-kit.js';
import { configSchema } from '../../src/shared/config/schema.js';

// As errors.test.ts does for error codes: the docs' key tables are the schemas' own.
for (const doc of CONFIG_DOCS) {
  t.test(`${doc.file} lists every key of ${doc.schema}, as declared`, async (t) => {
    const text = readDoc(doc.file);
    t.equal(withTable(text, doc.table(), doc.file), text, `run "npm run docs:config" after changing ${doc.schema}`);
  });
}

t.test('the server table names the keys the docs once missed, with their bounds', async (t) => {
  const rows = docRows(configSchema('/')).join('\n');
  for (const key of ['store.watch_settle', 'coap.dedup_cache_bytes', 'coap.max_in_flight']) t.match(rows, `| \`${key}\` |`);
  t.match(rows, /`store\.delta_concurrency` \| `2` \| .*; 1 to 64 \|/);
});

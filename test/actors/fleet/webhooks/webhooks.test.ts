import { webhookCases } from './webhooks-case.js';

// Webhooks end to end on SQLite: the real server process, a real receiver on 127.0.0.1 that
// checks each signature; delivery in order, retries, a kill -9 between an event and its
// delivery. The same on PostgreSQL: webhooks-postgres.test.ts; from a cluster of two
// replicas: webhooks-cluster.test.ts.

webhookCases('sqlite');

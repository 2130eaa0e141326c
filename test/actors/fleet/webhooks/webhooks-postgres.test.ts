import { webhookCases } from './webhooks-case.js';

// The webhook tests of webhooks.test.ts (delivery in order, retries, a kill -9 before the
// delivery) on PostgreSQL: a file of their own, so that each file's real-time waits fit tap's
// per-file limit on a loaded machine.

webhookCases('postgres');

import type { IncomingMessage, OutgoingMessage } from 'coap';

// The shape of a CoAP device route, apart from the routes (routes.ts) and the routes it takes
// from beside it (auth-route.ts), so that neither imports the other.

/** Answers one request and returns the route's name for the metrics. */
export type Handler = (req: IncomingMessage, res: OutgoingMessage, path: readonly string[]) => Promise<string>;

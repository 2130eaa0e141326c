import type { HttpRequest, TemplatedApp } from 'uWebSockets.js';
import type { FleetFeed } from '../../front-ends/fleet-feed.js';
import type { HeartbeatAnswers } from '../../front-ends/heartbeat-answers.js';
import type { DeviceGate } from '../../front-ends/device-gate.js';
import type { TransferLocator } from '../../front-ends/transfer-locator.js';
import type { ActorContext } from '../../runtime.js';
import type { HttpMetrics } from '../server/metrics.js';
import type { Exchange } from '../server/respond.js';

// The shapes of the device routes, apart from the routes themselves (routes.ts registers them;
// auth-route.ts adds /auth through a DeviceRoute), so the two files do not import each other.

/** `certifiedId`: the device of a verified client certificate (only on the certificate front's listener), else undefined. */
export type Handler = (ex: Exchange, req: HttpRequest, certifiedId: string | undefined) => Promise<void>;

/** A device listener's app, and on the certificate front's loopback listener the reader of its certified device. */
export interface DeviceApp {
  readonly app: TemplatedApp;
  readonly certifiedId?: ((req: HttpRequest) => string | undefined) | undefined;
}

export interface RouteDeps {
  ctx: ActorContext;
  metrics: HttpMetrics;
  /** Open downloads, so a drain can wait for them. */
  downloads: Set<Promise<void>>;
  transfers: TransferLocator;
  /** Where answered heartbeats and reports go for the inventory. */
  fleet: FleetFeed;
  /** Device tokens (devices.auth): checked on every device route when on. */
  gate: DeviceGate;
  /** Heartbeat answers as JSON text: from the front-end's decision snapshot, or the manifester's. */
  heartbeats: HeartbeatAnswers<string>;
  isDraining(): boolean;
}

export type DeviceRoute = (method: 'get' | 'post', path: string, name: string, handler: Handler) => void;

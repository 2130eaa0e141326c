import type { Deadlines } from '../shared/rpc.js';
import { CONTROL_DEADLINES_MS, type ControlApi, type PeerName } from './lifecycle.js';
import { FLEET_DEADLINES_MS, type FleetApi } from './fleet.js';
import { MANIFESTER_DEADLINES_MS, type ManifesterApi } from './manifester.js';
import { STORE_KEEPER_DEADLINES_MS, type StoreKeeperApi } from './store.js';
import { SUPERVISOR_DEADLINES_MS, type SupervisorApi } from './supervisor.js';
import { SWEEPER_DEADLINES_MS, type SweeperApi } from './sweeper.js';

// Who answers to which name: `ctx.call('manifester', (m) => m.heartbeats(batch))` is typed
// from this map, and every call gets the deadline its API states.

export interface PeerApis {
  'manifester': ManifesterApi;
  'store-keeper': StoreKeeperApi;
  'fleet': FleetApi;
  'sweeper': SweeperApi;
  'supervisor': SupervisorApi;
  'http': ControlApi;
  'coap': ControlApi;
}

export const PEER_DEADLINES_MS: { readonly [P in PeerName]: Deadlines<PeerApis[P]> } = {
  'manifester': MANIFESTER_DEADLINES_MS,
  'store-keeper': STORE_KEEPER_DEADLINES_MS,
  'fleet': FLEET_DEADLINES_MS,
  'sweeper': SWEEPER_DEADLINES_MS,
  'supervisor': SUPERVISOR_DEADLINES_MS,
  'http': CONTROL_DEADLINES_MS,
  'coap': CONTROL_DEADLINES_MS,
};

export type { Peer } from '../shared/rpc.js';

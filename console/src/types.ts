// The shapes of the admin API answers the console reads: the server's own definitions
// (src/messages/admin-wire.ts, a module without imports), taken as types only, so nothing of
// the server enters the bundle and the two cannot drift apart. Named here as the views use them.

import type { DeviceView, RolloutView } from '../../src/messages/admin-wire.js';

export type {
  DeviceDetail,
  DeviceListing as DevicePage,
  DeviceView as Device,
  FleetReportView as FleetReport,
  FleetView as Fleet,
  ReportView as Report,
  RolloutView as Rollout,
  TrackListing as TrackList,
  TrackView as Track,
} from '../../src/messages/admin-wire.js';

export type RolloutState = RolloutView['state'];
export type LastReport = NonNullable<DeviceView['last_report']>;

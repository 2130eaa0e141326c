import t from 'tap';
import { judgeDeviceAuth, type SoakDeviceAuth } from '../../bench/soak/device-auth.js';

// The soak's judgement with devices.auth on: every device enrolled, every heartbeat without a
// token refused (401 over HTTP, 4.01 over CoAP) and none of their devices recorded. The
// refusals themselves are what the server should do and fail nothing.

const passing: SoakDeviceAuth = {
  enrolled: 2000, enroll_seconds: 5, auth_requests: 2010, reauthenticated: { http: 3 },
  tokens_refused: { missing: 120, revoked: 3 }, auth_outcomes: { accepted: 2010 },
  unauthenticated_answers: { http_unauthenticated_heartbeat_answered_401: 60, 'coap_unauthenticated_heartbeat_answered_4.01': 60 },
  unauthenticated_sent: 120, strangers_recorded: [],
};

t.same(judgeDeviceAuth(passing, 2000), [], 'refusals of strangers and cured 401s are not failures');
t.match(judgeDeviceAuth({ ...passing, enrolled: 1990 }, 2000), [/only 1990 of 2000 devices enrolled/]);
t.match(judgeDeviceAuth({ ...passing, unauthenticated_answers: { ...passing.unauthenticated_answers, http_unauthenticated_heartbeat_answered_200: 1 } }, 2000),
  [/answered other than 401 \/ 4.01: \{"http_unauthenticated_heartbeat_answered_200":1\}/], 'a stranger answered 200 fails the soak');
t.match(judgeDeviceAuth({ ...passing, unauthenticated_answers: { 'coap_unauthenticated_heartbeat_answered_2.05': 2 } }, 2000), [/answered other than/], 'so does 2.05 over CoAP');
t.match(judgeDeviceAuth({ ...passing, unauthenticated_answers: {} }, 2000), [/none was answered/], 'a check with no answers is not a pass');
t.match(judgeDeviceAuth({ ...passing, strangers_recorded: ['hostile-no-token-0 (GET /admin/devices/hostile-no-token-0 answered 200)'] }, 2000), [/never authenticated were recorded: hostile-no-token-0/]);

import t from 'tap';
import { MAX_VERSION_LABEL_LENGTH, versionLabelProblem } from '../../../src/shared/version-label.js';
import { validateHeartbeat } from '../../../src/shared/wire/validate.js';

// The version label's one limit, end to end (issue 37): what a track may carry is what a
// heartbeat may report, so a device that runs the longest label a track holds is not refused
// when it reports it. (The agent's end is in test/agent/manifest.test.ts.)

const heartbeat = (version: string) => ({
  device_id: 'dev-1', version_hash: 'a'.repeat(64), timestamp: 1, version, hw_info: { arch: 'arm64', os: 'linux', free_ram: 1, free_disk: 1 },
});

t.test('a heartbeat reports a label as long as a track may carry, not one character more', async (t) => {
  t.equal(MAX_VERSION_LABEL_LENGTH, 128);
  const longest = 'v'.repeat(MAX_VERSION_LABEL_LENGTH);
  t.equal(versionLabelProblem(longest), undefined, 'a track takes it');
  t.equal(validateHeartbeat(heartbeat(longest)).version, longest, 'and a heartbeat reports it whole');
  t.throws(() => validateHeartbeat(heartbeat(`${longest}x`)), { code: 'INVALID_FIELD', message: /version/ }, 'one more is refused');
  t.ok(versionLabelProblem(`${longest}x`), 'as a track refuses it');
});

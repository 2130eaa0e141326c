'use strict';
// The compiled engine: the addon (streaming patch for the device agent) and the path of the
// `updater-delta` program the server runs in a child process.
const { join } = require('node:path');

const release = join(__dirname, 'build', 'Release');
const addon = require(join(release, 'delta_engine.node'));

module.exports = {
  /** Rebuilds `outPath` from `oldPath` and a BSDIFF40 patch, streaming; returns its size. */
  patch: addon.patch,
  /** Applies the patch and compares with `expectedPath`; throws DELTA_MISMATCH on a difference. */
  verify: addon.verify,
  /** Writes the BSDIFF40 patch from `oldPath` to `newPath`; returns its size. */
  diff: addon.diff,
  /** The engine as a program: `diff`, `verify`, `patch` and `sa-check` commands. */
  programPath: join(release, 'updater-delta'),
};

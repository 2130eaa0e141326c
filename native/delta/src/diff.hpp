#pragma once

#include <cstdint>
#include <string>

namespace delta {

struct DiffStats {
  int64_t patchBytes = 0;
  int64_t controls = 0;
  double sortSeconds = 0;
  double scanSeconds = 0;
  double totalSeconds = 0;
};

void checkSizes(int64_t oldSize, int64_t newSize);

// Writes the BSDIFF40 patch from `oldPath` to `newPath` into `patchPath` (fsynced), using
// `patchPath` + ".ctrl", ".diff" and ".extra" as scratch files it removes again.
DiffStats writeDiff(const std::string& oldPath, const std::string& newPath, const std::string& patchPath);

}  // namespace delta

#pragma once

#include <cstdint>
#include <string>

#include "format.hpp"

namespace delta {

struct DiffStats {
  int64_t patchBytes = 0;
  int64_t controls = 0;
  double sortSeconds = 0;
  double scanSeconds = 0;
  double totalSeconds = 0;
};

void checkSizes(int64_t oldSize, int64_t newSize);

// Writes the patch (BSDIFF40 or bsdiff-lzma) from `oldPath` to `newPath` into `patchPath`
// (fsynced), using `patchPath` + ".ctrl", ".diff" and ".extra" as scratch files it removes again.
DiffStats writeDiff(const std::string& oldPath, const std::string& newPath, const std::string& patchPath,
                    Format format = Format::Bsdiff40);

// "bsdiff40" or "bsdiff-lzma"; throws Failure("USAGE") for any other name.
Format formatNamed(const std::string& name);

}  // namespace delta

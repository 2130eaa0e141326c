#pragma once

#include <cstdint>
#include <string>

namespace delta {

// Rebuilds the new file from `oldPath` and the patch (BSDIFF40 or bsdiff-lzma, by its magic)
// at `patchPath` into `outPath`
// (created, fsynced), streaming: memory is the mapped old file plus fixed buffers.
// Returns the rebuilt size.
int64_t writePatched(const std::string& oldPath, const std::string& patchPath, const std::string& outPath);

// Applies the patch the same way and compares every rebuilt byte with `expectedPath`;
// throws Failure("MISMATCH") at the first difference.
void verifyPatch(const std::string& oldPath, const std::string& patchPath, const std::string& expectedPath);

}  // namespace delta

// A patch being read, whatever its format: the control triples and the difference and extra
// bytes they ask for, in order. apply.cpp runs the one bspatch loop over either source.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io.hpp"

namespace delta {

[[noreturn]] inline void corrupt(const std::string& why) { throw Failure("CORRUPT_PATCH", "the patch is corrupt: " + why); }

class PatchSource {
 public:
  virtual ~PatchSource() = default;
  virtual int64_t newSize() const = 0;
  // The next triple; reports the patch corrupt when there is none.
  virtual void control(int64_t* copy, int64_t* extra, int64_t* seek) = 0;
  virtual void diff(uint8_t* into, size_t length) = 0;
  virtual void extra(uint8_t* into, size_t length) = 0;
  // Called once the new file is complete: a format may insist that nothing is left over.
  virtual void finish() {}
};

// The bsdiff-lzma patch open on `fd` (`patchSize` bytes), whose first 40 bytes are `header`.
std::unique_ptr<PatchSource> openLzmaSource(int fd, int64_t patchSize, const uint8_t* header);

}  // namespace delta

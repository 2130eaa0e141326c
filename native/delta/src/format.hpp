// The BSDIFF40 container: "BSDIFF40", the compressed lengths of the control and difference
// streams and the new file's length, each as a 64-bit sign-and-magnitude little-endian
// integer, followed by the three bzip2 streams.
#pragma once

#include <cstdint>

namespace delta {

constexpr char kMagic[] = "BSDIFF40";
constexpr int kHeaderBytes = 32;
// 32-bit suffix array indices, and int32 lengths in the reduced strings.
constexpr int64_t kMaxInputBytes = INT64_C(0x7fffffff);

inline void writeOffset(int64_t value, uint8_t* out) {
  uint64_t magnitude = value < 0 ? static_cast<uint64_t>(-value) : static_cast<uint64_t>(value);
  for (int i = 0; i < 8; i++) {
    out[i] = static_cast<uint8_t>(magnitude & 0xff);
    magnitude >>= 8;
  }
  if (value < 0) out[7] |= 0x80;
}

inline int64_t readOffset(const uint8_t* in) {
  uint64_t magnitude = in[7] & 0x7f;
  for (int i = 6; i >= 0; i--) magnitude = (magnitude << 8) | in[i];
  const int64_t value = static_cast<int64_t>(magnitude);
  return (in[7] & 0x80) ? -value : value;
}

}  // namespace delta

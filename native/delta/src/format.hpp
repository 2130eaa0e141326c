// The two patch containers (docs/protocol.md, "Patch formats", specifies both byte for byte).
// BSDIFF40: "BSDIFF40", the compressed lengths of the control and difference streams and the
// new file's length, each as a 64-bit sign-and-magnitude little-endian integer, followed by
// the three bzip2 streams. bsdiff-lzma: "BSDLZMA1", the new file's length and the lengths of
// the three streams as unsigned 64-bit little-endian integers, followed by three xz streams
// (control triples as varints, zero-run coded differences, extra bytes).
#pragma once

#include <cstddef>
#include <cstdint>

namespace delta {

constexpr char kMagic[] = "BSDIFF40";
constexpr int kHeaderBytes = 32;
// 32-bit suffix array indices, and int32 lengths in the reduced strings.
constexpr int64_t kMaxInputBytes = INT64_C(0x7fffffff);

constexpr char kLzmaMagic[] = "BSDLZMA1";
constexpr int kLzmaHeaderBytes = 40;
// 256 KiB: dictionaries of 512 KiB to 8 MiB made patches of real executables no smaller
// (within 0.1 %), and the encoder's tables, beside the search's suffix array, grow with it.
constexpr uint32_t kXzDictBytes = 1 << 18;
// A decoder refuses an xz stream asking for more (the format allows dictionaries up to 8 MiB).
constexpr uint64_t kXzMemoryLimit = 16 << 20;
// The longest literal run in one difference record the encoder writes.
constexpr size_t kMaxLiteralRun = 1 << 16;

enum class Format { Bsdiff40, BsdiffLzma };

inline void writeU64(uint64_t value, uint8_t* out) {
  for (int i = 0; i < 8; i++) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

inline uint64_t readU64(const uint8_t* in) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; i--) value = (value << 8) | in[i];
  return value;
}

// Unsigned LEB128: 7 bits a byte, low group first, high bit set on all but the last byte.
inline size_t writeVarint(uint64_t value, uint8_t* out) {
  size_t n = 0;
  while (value >= 0x80) {
    out[n++] = static_cast<uint8_t>(value | 0x80);
    value >>= 7;
  }
  out[n++] = static_cast<uint8_t>(value);
  return n;
}

// Zigzag: 0, -1, 1, -2, ... as 0, 1, 2, 3, ...; small seeks of either sign stay one byte.
inline uint64_t zigzag(int64_t value) {
  return value >= 0 ? static_cast<uint64_t>(value) << 1 : ((static_cast<uint64_t>(-(value + 1))) << 1) | 1;
}

inline int64_t unzigzag(uint64_t value) {
  return (value & 1) ? -static_cast<int64_t>(value >> 1) - 1 : static_cast<int64_t>(value >> 1);
}

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

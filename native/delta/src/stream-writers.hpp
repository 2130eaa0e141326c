// What the diff loop writes into the control and difference streams, in either format.
// BSDIFF40 takes 24-byte sign-and-magnitude triples and the raw byte-wise differences.
// bsdiff-lzma takes varint triples and codes the differences as records (zero run length,
// literal run length, the literals): the differences of a rebuilt executable are mostly
// zeros, and xz's best preset spends seconds on megabytes of zeros while gaining little
// over this coding on real executables (measured in bench/results/2026-11-27-patch-format.md).
#pragma once

#include <cstdint>
#include <vector>

#include "format.hpp"
#include "packed-stream.hpp"

namespace delta {

inline void writeControl(PackedStream& stream, Format format, int64_t copy, int64_t extra, int64_t seek) {
  uint8_t control[30];
  if (format == Format::Bsdiff40) {
    writeOffset(copy, control);
    writeOffset(extra, control + 8);
    writeOffset(seek, control + 16);
    stream.write(control, 24);
    return;
  }
  size_t n = writeVarint(static_cast<uint64_t>(copy), control);
  n += writeVarint(static_cast<uint64_t>(extra), control + n);
  n += writeVarint(zigzag(seek), control + n);
  stream.write(control, n);
}

// Differences are staged in a small buffer: the compressing thread takes them 1 MiB at a time.
class DiffWriter {
 public:
  DiffWriter(PackedStream& stream, Format format) : stream_(stream), format_(format) {
    if (format == Format::BsdiffLzma) literals_.reserve(kMaxLiteralRun);
  }
  void add(const uint8_t* target, const uint8_t* old, int64_t length) {
    while (length > 0) {
      const int64_t take = std::min<int64_t>(length, sizeof(buffer_));
      for (int64_t i = 0; i < take; i++) buffer_[i] = static_cast<uint8_t>(target[i] - old[i]);
      if (format_ == Format::Bsdiff40) {
        stream_.write(buffer_, static_cast<size_t>(take));
      } else {
        addRuns(buffer_, static_cast<size_t>(take));
      }
      target += take;
      old += take;
      length -= take;
    }
  }
  // Writes the last record; the difference stream is complete after this.
  void finish() {
    if (zeros_ > 0 || !literals_.empty()) flushRecord();
  }

 private:
  // A record is a run of zeros then a run of non-zero-led literals; a zero after literals
  // (or a literal run at its cap) ends it.
  void addRuns(const uint8_t* bytes, size_t length) {
    for (size_t i = 0; i < length; i++) {
      if (bytes[i] == 0 && literals_.empty()) {
        zeros_++;
        continue;
      }
      if (bytes[i] == 0 || literals_.size() == kMaxLiteralRun) flushRecord();
      if (bytes[i] == 0) {
        zeros_ = 1;
      } else {
        literals_.push_back(bytes[i]);
      }
    }
  }
  void flushRecord() {
    uint8_t lengths[20];
    size_t n = writeVarint(zeros_, lengths);
    n += writeVarint(literals_.size(), lengths + n);
    stream_.write(lengths, n);
    stream_.write(literals_.data(), literals_.size());
    zeros_ = 0;
    literals_.clear();
  }

  PackedStream& stream_;
  Format format_;
  uint64_t zeros_ = 0;
  std::vector<uint8_t> literals_;
  uint8_t buffer_[1 << 16];
};

}  // namespace delta

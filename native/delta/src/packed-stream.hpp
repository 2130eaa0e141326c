// A compressed stream (bzip2 for BSDIFF40, xz for bsdiff-lzma) written to a file by a thread
// of its own: the diff loop hands it 1 MiB buffers and goes on searching while the
// compressor runs on the other core. Memory is bounded: the compressor's own (bzip2 about
// 7.6 MB at block size 9; xz about 3 MB with its 256 KiB dictionary, started with the first
// full buffer or at the end) plus a fixed ring of buffers.
#pragma once

#include <bzlib.h>
#include <lzma.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io.hpp"

namespace delta {

enum class Codec { Bzip2, Xz };

class PackedStream {
 public:
  PackedStream(const std::string& path, Codec codec);
  ~PackedStream();
  PackedStream(const PackedStream&) = delete;
  PackedStream& operator=(const PackedStream&) = delete;
  void write(const uint8_t* bytes, size_t length);
  // Ends the stream and returns its compressed size; rethrows a failure of the thread.
  int64_t finish();

 private:
  void hand(std::vector<uint8_t>&& full, bool last);
  void run();
  void compress(const std::vector<uint8_t>& input, bool last);
  void compressBz2(const std::vector<uint8_t>& input, bool last);
  void compressXz(const std::vector<uint8_t>& input, bool last);
  void startXz(size_t streamBytes);

  static constexpr size_t kBufferBytes = 1 << 20;
  static constexpr size_t kRingBuffers = 3;

  FileWriter out_;
  Codec codec_;
  bz_stream bz_{};
  lzma_stream xz_ = LZMA_STREAM_INIT;
  bool xzStarted_ = false;
  std::vector<uint8_t> current_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<uint8_t>> full_;
  std::vector<std::vector<uint8_t>> free_;
  bool last_ = false;
  bool finished_ = false;
  std::exception_ptr failure_;
  std::thread worker_;
};

}  // namespace delta

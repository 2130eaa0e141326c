// A bzip2 stream written to a file by a thread of its own: the diff loop hands it 1 MiB
// buffers and goes on searching while the block sort runs on the other core. Memory is
// bounded: bzip2's own (about 7.6 MB at block size 9) plus a fixed ring of buffers.
#pragma once

#include <bzlib.h>

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

class Bz2Stream {
 public:
  explicit Bz2Stream(const std::string& path);
  ~Bz2Stream();
  Bz2Stream(const Bz2Stream&) = delete;
  Bz2Stream& operator=(const Bz2Stream&) = delete;
  void write(const uint8_t* bytes, size_t length);
  // Ends the stream and returns its compressed size; rethrows a failure of the thread.
  int64_t finish();

 private:
  void hand(std::vector<uint8_t>&& full, bool last);
  void run();
  void compress(const std::vector<uint8_t>& input, int action);

  static constexpr size_t kBufferBytes = 1 << 20;
  static constexpr size_t kRingBuffers = 3;

  FileWriter out_;
  bz_stream bz_{};
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

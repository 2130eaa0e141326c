#include "bz2-stream.hpp"

#include <cstring>

namespace delta {

Bz2Stream::Bz2Stream(const std::string& path) : out_(path) {
  // Block size 9, as the bsdiff command uses: the same compression, so the same patch size.
  if (BZ2_bzCompressInit(&bz_, 9, 0, 0) != BZ_OK) throw Failure("NO_MEMORY", "bzip2 could not start");
  for (size_t i = 0; i < kRingBuffers - 1; i++) free_.emplace_back();
  current_.reserve(kBufferBytes);
  worker_ = std::thread([this] { run(); });
}

Bz2Stream::~Bz2Stream() {
  if (worker_.joinable()) {
    hand(std::vector<uint8_t>(), true);
    worker_.join();
  }
  BZ2_bzCompressEnd(&bz_);
}

void Bz2Stream::write(const uint8_t* bytes, size_t length) {
  while (length > 0) {
    const size_t take = std::min(length, kBufferBytes - current_.size());
    current_.insert(current_.end(), bytes, bytes + take);
    bytes += take;
    length -= take;
    if (current_.size() == kBufferBytes) hand(std::move(current_), false);
  }
}

// Queues a full buffer and takes a free one back (waiting while the thread is behind).
void Bz2Stream::hand(std::vector<uint8_t>&& full, bool last) {
  std::unique_lock<std::mutex> lock(mutex_);
  full_.push_back(std::move(full));
  last_ = last_ || last;
  changed_.notify_all();
  if (last) return;
  changed_.wait(lock, [this] { return !free_.empty(); });
  current_ = std::move(free_.back());
  free_.pop_back();
  current_.clear();
  current_.reserve(kBufferBytes);
}

void Bz2Stream::run() {
  for (;;) {
    std::vector<uint8_t> input;
    bool last;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return !full_.empty(); });
      input = std::move(full_.front());
      full_.pop_front();
      last = last_ && full_.empty();
    }
    if (!failure_) {
      try {
        compress(input, last ? BZ_FINISH : BZ_RUN);
      } catch (...) {
        failure_ = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(std::move(input));
      changed_.notify_all();
    }
    if (last) return;
  }
}

void Bz2Stream::compress(const std::vector<uint8_t>& input, int action) {
  char out[1 << 16];
  bz_.next_in = const_cast<char*>(reinterpret_cast<const char*>(input.data()));
  bz_.avail_in = static_cast<unsigned>(input.size());
  for (;;) {
    bz_.next_out = out;
    bz_.avail_out = sizeof(out);
    const int status = BZ2_bzCompress(&bz_, action);
    if (status < 0) throw Failure("IO", "bzip2 failed with status " + std::to_string(status));
    out_.write(out, sizeof(out) - bz_.avail_out);
    if (action == BZ_FINISH ? status == BZ_STREAM_END : bz_.avail_in == 0) return;
  }
}

int64_t Bz2Stream::finish() {
  hand(std::move(current_), true);
  worker_.join();
  if (failure_) std::rethrow_exception(failure_);
  out_.flush();
  return out_.written();
}

}  // namespace delta

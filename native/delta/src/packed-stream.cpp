#include "packed-stream.hpp"

#include <cstring>

#include "format.hpp"

namespace delta {

PackedStream::PackedStream(const std::string& path, Codec codec) : out_(path), codec_(codec) {
  if (codec == Codec::Bzip2) {
    // Block size 9, as the bsdiff command uses: the same compression, so the same patch size.
    if (BZ2_bzCompressInit(&bz_, 9, 0, 0) != BZ_OK) throw Failure("NO_MEMORY", "bzip2 could not start");
  }
  // The xz encoder starts with the first buffer, when the stream's size may be known.
  for (size_t i = 0; i < kRingBuffers - 1; i++) free_.emplace_back();
  current_.reserve(kBufferBytes);
  worker_ = std::thread([this] { run(); });
}

PackedStream::~PackedStream() {
  if (worker_.joinable()) {
    hand(std::vector<uint8_t>(), true);
    worker_.join();
  }
  if (codec_ == Codec::Bzip2) BZ2_bzCompressEnd(&bz_);
  lzma_end(&xz_);
}

void PackedStream::write(const uint8_t* bytes, size_t length) {
  while (length > 0) {
    const size_t take = std::min(length, kBufferBytes - current_.size());
    current_.insert(current_.end(), bytes, bytes + take);
    bytes += take;
    length -= take;
    if (current_.size() == kBufferBytes) hand(std::move(current_), false);
  }
}

// Queues a full buffer and takes a free one back (waiting while the thread is behind).
void PackedStream::hand(std::vector<uint8_t>&& full, bool last) {
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

void PackedStream::run() {
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
        compress(input, last);
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

void PackedStream::compress(const std::vector<uint8_t>& input, bool last) {
  if (codec_ == Codec::Bzip2) {
    compressBz2(input, last);
  } else {
    compressXz(input, last);
  }
}

void PackedStream::compressBz2(const std::vector<uint8_t>& input, bool last) {
  const int action = last ? BZ_FINISH : BZ_RUN;
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

// Preset 9e (its nice length of 273 codes the long runs of equal bytes in bsdiff's streams
// best), with a 256 KiB dictionary (format.hpp). A stream that ends within its first buffer
// (the control and extra streams of most patches) starts its encoder only when the search is
// over, with a dictionary just large enough for it: those tables never sit beside the suffix
// array.
void PackedStream::startXz(size_t streamBytes) {
  lzma_options_lzma options;
  if (lzma_lzma_preset(&options, 9 | LZMA_PRESET_EXTREME)) throw Failure("INTERNAL", "no xz preset 9e");
  options.dict_size = kXzDictBytes;
  if (streamBytes < kXzDictBytes) {
    options.dict_size = LZMA_DICT_SIZE_MIN;
    while (options.dict_size < streamBytes) options.dict_size <<= 1;
  }
  const lzma_filter filters[] = {{LZMA_FILTER_LZMA2, &options}, {LZMA_VLI_UNKNOWN, nullptr}};
  if (lzma_stream_encoder(&xz_, filters, LZMA_CHECK_CRC32) != LZMA_OK) throw Failure("NO_MEMORY", "xz could not start");
  xzStarted_ = true;
}

void PackedStream::compressXz(const std::vector<uint8_t>& input, bool last) {
  if (!xzStarted_) startXz(last ? input.size() : kXzDictBytes);
  const lzma_action action = last ? LZMA_FINISH : LZMA_RUN;
  uint8_t out[1 << 16];
  xz_.next_in = input.data();
  xz_.avail_in = input.size();
  for (;;) {
    xz_.next_out = out;
    xz_.avail_out = sizeof(out);
    const lzma_ret status = lzma_code(&xz_, action);
    if (status != LZMA_OK && status != LZMA_STREAM_END) {
      throw Failure(status == LZMA_MEM_ERROR ? "NO_MEMORY" : "IO", "xz failed with status " + std::to_string(status));
    }
    out_.write(out, sizeof(out) - xz_.avail_out);
    if (last ? status == LZMA_STREAM_END : xz_.avail_in == 0) return;
  }
}

int64_t PackedStream::finish() {
  hand(std::move(current_), true);
  worker_.join();
  if (failure_) std::rethrow_exception(failure_);
  out_.flush();
  return out_.written();
}

}  // namespace delta

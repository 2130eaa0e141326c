// Reading a bsdiff-lzma patch, streamed: its three xz streams are decoded at their own
// offsets as the control triples ask for bytes. Memory is fixed whatever the image size:
// three xz decoders (each refuses a stream whose dictionary would take more than
// kXzMemoryLimit; ours use 1 MiB) and a 64 KiB input and output buffer each. Anything that
// does not decode exactly is CORRUPT_PATCH, as a broken BSDIFF40 patch is: a bad xz check,
// a stream ending early or carrying bytes past what the triples use, a header whose lengths
// do not add up to the file.
#include <lzma.h>

#include <algorithm>
#include <cstring>

#include "format.hpp"
#include "patch-source.hpp"

namespace delta {
namespace {

class XzReader {
 public:
  XzReader(int fd, int64_t offset, int64_t length) : source_(fd, offset, length) {
    if (lzma_stream_decoder(&xz_, kXzMemoryLimit, 0) != LZMA_OK) throw Failure("NO_MEMORY", "xz could not start");
  }
  ~XzReader() { lzma_end(&xz_); }
  XzReader(const XzReader&) = delete;
  XzReader& operator=(const XzReader&) = delete;

  void readExact(uint8_t* into, size_t length) {
    while (length > 0) {
      if (position_ == end_ && !fill()) corrupt("an xz stream ends early");
      const size_t take = std::min(length, end_ - position_);
      std::memcpy(into, out_ + position_, take);
      position_ += take;
      into += take;
      length -= take;
    }
  }

  // An unsigned LEB128 number of at most nine bytes (63 bits).
  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
      if (position_ == end_ && !fill()) corrupt("an xz stream ends inside a number");
      if (shift == 63) corrupt("a number is longer than nine bytes");
      const uint8_t byte = out_[position_++];
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
  }

  // The stream must end here: no decoded byte left, and no byte after the xz stream.
  void expectEnd() {
    if (position_ < end_ || fill()) corrupt("an xz stream holds more than the patch uses");
    uint8_t spare;
    if (xz_.avail_in > 0 || source_.read(&spare, 1) > 0) corrupt("bytes follow an xz stream");
  }

 private:
  // Decodes the next piece into out_; false once the stream has ended.
  bool fill() {
    position_ = end_ = 0;
    while (end_ == 0) {
      if (ended_) return false;
      if (xz_.avail_in == 0 && !inputDone_) {
        xz_.next_in = input_;
        xz_.avail_in = source_.read(input_, sizeof(input_));
        inputDone_ = xz_.avail_in == 0;
      }
      xz_.next_out = out_;
      xz_.avail_out = sizeof(out_);
      const lzma_ret status = lzma_code(&xz_, inputDone_ ? LZMA_FINISH : LZMA_RUN);
      end_ = sizeof(out_) - xz_.avail_out;
      if (status == LZMA_STREAM_END) {
        ended_ = true;
      } else if (status == LZMA_MEMLIMIT_ERROR) {
        corrupt("an xz stream asks for a dictionary larger than 8 MiB");
      } else if (status == LZMA_BUF_ERROR) {
        corrupt("an xz stream is truncated");
      } else if (status != LZMA_OK) {
        corrupt("xz status " + std::to_string(status));
      }
    }
    return true;
  }

  RangeReader source_;
  lzma_stream xz_ = LZMA_STREAM_INIT;
  uint8_t input_[1 << 16];
  uint8_t out_[1 << 16];
  size_t position_ = 0;
  size_t end_ = 0;
  bool inputDone_ = false;
  bool ended_ = false;
};

// Lengths and seeks beyond this are no file this engine makes (nor reads: 2 GiB inputs).
constexpr uint64_t kMaxNumber = UINT64_C(1) << 62;

class LzmaSource : public PatchSource {
 public:
  LzmaSource(int fd, int64_t newSize, int64_t ctrlBytes, int64_t diffBytes, int64_t extraBytes)
      : newSize_(newSize),
        ctrl_(fd, kLzmaHeaderBytes, ctrlBytes),
        diff_(fd, kLzmaHeaderBytes + ctrlBytes, diffBytes),
        extra_(fd, kLzmaHeaderBytes + ctrlBytes + diffBytes, extraBytes) {}

  int64_t newSize() const override { return newSize_; }

  void control(int64_t* copy, int64_t* extra, int64_t* seek) override {
    const uint64_t values[3] = {ctrl_.varint(), ctrl_.varint(), ctrl_.varint()};
    for (const uint64_t value : values) {
      if (value > kMaxNumber) corrupt("a control number is too large");
    }
    *copy = static_cast<int64_t>(values[0]);
    *extra = static_cast<int64_t>(values[1]);
    *seek = unzigzag(values[2]);
  }

  // The differences come as records: a run of zeros, then a run of literal bytes.
  void diff(uint8_t* into, size_t length) override {
    while (length > 0) {
      if (zeros_ == 0 && literals_ == 0) {
        zeros_ = diff_.varint();
        literals_ = diff_.varint();
        if (zeros_ == 0 && literals_ == 0) corrupt("an empty difference record");
        if (zeros_ > kMaxNumber || literals_ > kMaxNumber) corrupt("a difference record is too long");
      }
      if (zeros_ > 0) {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(zeros_, length));
        std::memset(into, 0, take);
        zeros_ -= take;
        into += take;
        length -= take;
        continue;
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(literals_, length));
      diff_.readExact(into, take);
      literals_ -= take;
      into += take;
      length -= take;
    }
  }

  void extra(uint8_t* into, size_t length) override { extra_.readExact(into, length); }

  void finish() override {
    ctrl_.expectEnd();
    if (zeros_ > 0 || literals_ > 0) corrupt("a difference record runs past the new file");
    diff_.expectEnd();
    extra_.expectEnd();
  }

 private:
  int64_t newSize_;
  XzReader ctrl_;
  XzReader diff_;
  XzReader extra_;
  uint64_t zeros_ = 0;
  uint64_t literals_ = 0;
};

}  // namespace

std::unique_ptr<PatchSource> openLzmaSource(int fd, int64_t patchSize, const uint8_t* header) {
  const uint64_t newSize = readU64(header + 8);
  const uint64_t lengths[3] = {readU64(header + 16), readU64(header + 24), readU64(header + 32)};
  const uint64_t body = static_cast<uint64_t>(patchSize - kLzmaHeaderBytes);
  if (newSize > kMaxNumber || lengths[0] > body || lengths[1] > body - lengths[0] || lengths[2] != body - lengths[0] - lengths[1]) {
    corrupt("the stream lengths in the header do not add up to the patch");
  }
  return std::make_unique<LzmaSource>(fd, static_cast<int64_t>(newSize), static_cast<int64_t>(lengths[0]),
                                      static_cast<int64_t>(lengths[1]), static_cast<int64_t>(lengths[2]));
}

}  // namespace delta

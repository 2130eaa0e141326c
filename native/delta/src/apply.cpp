// bspatch, streamed: the three compressed streams of the patch (bzip2 in BSDIFF40, xz in
// bsdiff-lzma, told apart by the magic) are read at their own offsets and decompressed as
// the control triples ask for bytes, and the rebuilt file leaves through a sink 1 MiB at a
// time (to a file on the device, or compared with the target on the server).
#include "apply.hpp"

#include <bzlib.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "format.hpp"
#include "io.hpp"
#include "patch-source.hpp"

namespace delta {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

class Bz2Reader {
 public:
  Bz2Reader(int fd, int64_t offset, int64_t length) : source_(fd, offset, length) {
    if (BZ2_bzDecompressInit(&bz_, 0, 0) != BZ_OK) throw Failure("NO_MEMORY", "bzip2 could not start");
  }
  ~Bz2Reader() { BZ2_bzDecompressEnd(&bz_); }
  Bz2Reader(const Bz2Reader&) = delete;
  Bz2Reader& operator=(const Bz2Reader&) = delete;

  // Fills exactly `length` bytes or reports the patch corrupt.
  void readExact(uint8_t* into, size_t length) {
    bz_.next_out = reinterpret_cast<char*>(into);
    bz_.avail_out = static_cast<unsigned>(length);
    while (bz_.avail_out > 0) {
      if (ended_) corrupt("a bzip2 stream ends early");
      if (bz_.avail_in == 0) {
        bz_.avail_in = static_cast<unsigned>(source_.read(input_, sizeof(input_)));
        bz_.next_in = input_;
        if (bz_.avail_in == 0) corrupt("a bzip2 stream is truncated");
      }
      const int status = BZ2_bzDecompress(&bz_);
      if (status == BZ_STREAM_END) {
        ended_ = true;
      } else if (status != BZ_OK) {
        corrupt("bzip2 status " + std::to_string(status));
      }
    }
  }

 private:
  RangeReader source_;
  bz_stream bz_{};
  char input_[1 << 16];
  bool ended_ = false;
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void put(const uint8_t* bytes, size_t length) = 0;
};

class FileSink : public Sink {
 public:
  explicit FileSink(const std::string& path) : out_(path) {}
  void put(const uint8_t* bytes, size_t length) override { out_.write(bytes, length); }
  void finish() { out_.finish(); }

 private:
  FileWriter out_;
};

class CompareSink : public Sink {
 public:
  explicit CompareSink(const MappedFile& expected) : expected_(expected) {}
  void put(const uint8_t* bytes, size_t length) override {
    if (offset_ + static_cast<int64_t>(length) > expected_.size() || std::memcmp(expected_.data() + offset_, bytes, length) != 0) {
      throw Failure("MISMATCH", "the patch does not rebuild the target (from byte " + std::to_string(offset_) + ")");
    }
    offset_ += static_cast<int64_t>(length);
  }

 private:
  const MappedFile& expected_;
  int64_t offset_ = 0;
};

// The old file is read with pread, chunk by chunk, rather than mapped: its pages stay in the
// page cache and out of this process's resident memory (the device agent's budget).
class OldReader {
 public:
  explicit OldReader(const std::string& path) : fd_{::open(path.c_str(), O_RDONLY | O_CLOEXEC)}, path_(path) {
    if (fd_.fd < 0) throw Failure("IO", errnoText("cannot open", path));
    size_ = ::lseek(fd_.fd, 0, SEEK_END);
    if (size_ < 0) throw Failure("IO", errnoText("cannot seek", path));
  }
  // Adds old[at + i] to bytes[i] for every i whose old position lies inside the file.
  void addTo(uint8_t* bytes, size_t length, int64_t at) {
    const int64_t first = std::max<int64_t>(at, 0);
    const int64_t last = std::min<int64_t>(at + static_cast<int64_t>(length), size_);
    if (first >= last) return;
    buffer_.resize(static_cast<size_t>(last - first));
    for (size_t done = 0; done < buffer_.size();) {
      const ssize_t n = ::pread(fd_.fd, buffer_.data() + done, buffer_.size() - done, first + static_cast<int64_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Failure("IO", errnoText("cannot read", path_));
      done += static_cast<size_t>(n);
    }
    uint8_t* into = bytes + (first - at);
    for (size_t i = 0; i < buffer_.size(); i++) into[i] = static_cast<uint8_t>(into[i] + buffer_[i]);
  }

 private:
  Fd fd_;
  std::string path_;
  int64_t size_ = 0;
  std::vector<uint8_t> buffer_;
};

class Bsdiff40Source : public PatchSource {
 public:
  Bsdiff40Source(int fd, int64_t patchSize, int64_t ctrlBytes, int64_t diffBytes, int64_t newSize)
      : newSize_(newSize),
        ctrl_(fd, kHeaderBytes, ctrlBytes),
        diff_(fd, kHeaderBytes + ctrlBytes, diffBytes),
        extra_(fd, kHeaderBytes + ctrlBytes + diffBytes, patchSize - kHeaderBytes - ctrlBytes - diffBytes) {}
  int64_t newSize() const override { return newSize_; }
  void control(int64_t* copy, int64_t* extra, int64_t* seek) override {
    uint8_t control[24];
    ctrl_.readExact(control, sizeof(control));
    *copy = readOffset(control);
    *extra = readOffset(control + 8);
    *seek = readOffset(control + 16);
  }
  void diff(uint8_t* into, size_t length) override { diff_.readExact(into, length); }
  void extra(uint8_t* into, size_t length) override { extra_.readExact(into, length); }

 private:
  int64_t newSize_;
  Bz2Reader ctrl_;
  Bz2Reader diff_;
  Bz2Reader extra_;
};

std::unique_ptr<PatchSource> openSource(int fd) {
  const int64_t patchSize = ::lseek(fd, 0, SEEK_END);
  uint8_t header[kLzmaHeaderBytes];
  if (patchSize < kHeaderBytes || ::pread(fd, header, kHeaderBytes, 0) != kHeaderBytes) corrupt("no header");
  if (std::memcmp(header, kLzmaMagic, 8) == 0) {
    if (patchSize < kLzmaHeaderBytes || ::pread(fd, header, kLzmaHeaderBytes, 0) != kLzmaHeaderBytes) corrupt("no header");
    return openLzmaSource(fd, patchSize, header);
  }
  if (std::memcmp(header, kMagic, 8) != 0) corrupt("neither BSDIFF40 nor bsdiff-lzma");
  const int64_t ctrlBytes = readOffset(header + 8);
  const int64_t diffBytes = readOffset(header + 16);
  const int64_t newSize = readOffset(header + 24);
  if (ctrlBytes < 0 || diffBytes < 0 || newSize < 0 || ctrlBytes > patchSize - kHeaderBytes ||
      diffBytes > patchSize - kHeaderBytes - ctrlBytes) {
    corrupt("impossible lengths in the header");
  }
  return std::make_unique<Bsdiff40Source>(fd, patchSize, ctrlBytes, diffBytes, newSize);
}

int64_t apply(const std::string& oldPath, const std::string& patchPath, Sink& sink, int64_t expectedSize) {
  OldReader old(oldPath);
  Fd patch{::open(patchPath.c_str(), O_RDONLY | O_CLOEXEC)};
  if (patch.fd < 0) throw Failure("IO", errnoText("cannot open", patchPath));
  const std::unique_ptr<PatchSource> source = openSource(patch.fd);
  const int64_t newSize = source->newSize();
  if (expectedSize >= 0 && newSize != expectedSize) {
    throw Failure("MISMATCH", "the patch rebuilds " + std::to_string(newSize) + " bytes, not " + std::to_string(expectedSize));
  }

  std::vector<uint8_t> chunk(1 << 20);
  int64_t oldPosition = 0, newPosition = 0;
  while (newPosition < newSize) {
    int64_t copyLength, extraLength, seek;
    source->control(&copyLength, &extraLength, &seek);
    if (copyLength < 0 || extraLength < 0 || copyLength > newSize - newPosition || extraLength > newSize - newPosition - copyLength) {
      corrupt("a control triple runs past the new file");
    }
    for (int64_t done = 0; done < copyLength;) {
      const size_t take = static_cast<size_t>(std::min<int64_t>(copyLength - done, static_cast<int64_t>(chunk.size())));
      source->diff(chunk.data(), take);
      // As stock bspatch: bytes whose old position falls outside the old file add nothing.
      old.addTo(chunk.data(), take, oldPosition + done);
      sink.put(chunk.data(), take);
      done += static_cast<int64_t>(take);
    }
    newPosition += copyLength;
    oldPosition += copyLength;
    for (int64_t done = 0; done < extraLength;) {
      const size_t take = static_cast<size_t>(std::min<int64_t>(extraLength - done, static_cast<int64_t>(chunk.size())));
      source->extra(chunk.data(), take);
      sink.put(chunk.data(), take);
      done += static_cast<int64_t>(take);
    }
    newPosition += extraLength;
    if (seek > INT64_C(1) << 40 || seek < -(INT64_C(1) << 40)) corrupt("a control triple seeks too far");
    oldPosition += seek;
  }
  source->finish();
  return newSize;
}

}  // namespace

int64_t writePatched(const std::string& oldPath, const std::string& patchPath, const std::string& outPath) {
  FileSink sink(outPath);
  const int64_t size = apply(oldPath, patchPath, sink, -1);
  sink.finish();
  return size;
}

void verifyPatch(const std::string& oldPath, const std::string& patchPath, const std::string& expectedPath) {
  MappedFile expected(expectedPath);
  CompareSink sink(expected);
  apply(oldPath, patchPath, sink, expected.size());
}

}  // namespace delta

// File helpers of the delta engine: read-only memory maps (inputs are never copied into the
// heap), a buffered writer, and the error type every entry point reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace delta {

// Every failure carries a stable code the JavaScript side maps to its error registry.
class Failure : public std::runtime_error {
 public:
  Failure(const char* code, const std::string& message) : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;
};

// Read-only view of a whole file, by mmap (an empty file maps to no bytes).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  // Tells the kernel the pages can go (they stay valid and are read back on demand).
  void release() const;
  // The same for the whole pages before `offset`: a file read front to back need not keep
  // what lies behind (its pages would otherwise count in the process's resident memory).
  void releaseBefore(int64_t offset);

 private:
  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t released_ = 0;
};

class FileWriter {
 public:
  // Creates (or truncates) `path`.
  explicit FileWriter(const std::string& path);
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(const void* bytes, size_t length);
  void writeAt(int64_t offset, const void* bytes, size_t length);
  void flush();
  // Flushes, fsyncs and closes; the destructor alone closes without the guarantee.
  void finish();
  int64_t written() const { return written_; }

 private:
  int fd_ = -1;
  std::string path_;
  char buffer_[1 << 16];
  size_t used_ = 0;
  int64_t written_ = 0;
};

// Reads a byte range of a file sequentially, for the bzip2 streams of a patch.
class RangeReader {
 public:
  RangeReader(int fd, int64_t offset, int64_t length) : fd_(fd), position_(offset), end_(offset + length) {}
  // Up to `length` bytes; 0 at the end of the range.
  size_t read(void* into, size_t length);

 private:
  int fd_;
  int64_t position_;
  int64_t end_;
};

std::string errnoText(const std::string& what, const std::string& path);

}  // namespace delta

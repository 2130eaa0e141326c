#include "io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace delta {

std::string errnoText(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Failure("IO", errnoText("cannot open", path));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    const std::string message = errnoText("cannot stat", path);
    ::close(fd);
    throw Failure("IO", message);
  }
  size_ = info.st_size;
  if (size_ > 0) {
    void* mapped = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const std::string message = errnoText("cannot map", path);
      ::close(fd);
      throw Failure("IO", message);
    }
    data_ = static_cast<const uint8_t*>(mapped);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
}

void MappedFile::release() const {
  if (data_ != nullptr) ::madvise(const_cast<uint8_t*>(data_), static_cast<size_t>(size_), MADV_DONTNEED);
}

void MappedFile::releaseBefore(int64_t offset) {
  static const int64_t page = ::sysconf(_SC_PAGESIZE);
  const int64_t end = std::min(offset, size_) / page * page;
  if (data_ == nullptr || end <= released_) return;
  ::madvise(const_cast<uint8_t*>(data_) + released_, static_cast<size_t>(end - released_), MADV_DONTNEED);
  released_ = end;
}

FileWriter::FileWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Failure("IO", errnoText("cannot create", path));
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void FileWriter::write(const void* bytes, size_t length) {
  const char* from = static_cast<const char*>(bytes);
  while (length > 0) {
    if (used_ == sizeof(buffer_)) flush();
    const size_t take = std::min(length, sizeof(buffer_) - used_);
    std::memcpy(buffer_ + used_, from, take);
    used_ += take;
    from += take;
    length -= take;
    written_ += static_cast<int64_t>(take);
  }
}

void FileWriter::flush() {
  size_t done = 0;
  while (done < used_) {
    const ssize_t n = ::write(fd_, buffer_ + done, used_ - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Failure(errno == ENOSPC ? "DISK_FULL" : "IO", errnoText("cannot write", path_));
    }
    done += static_cast<size_t>(n);
  }
  used_ = 0;
}

void FileWriter::writeAt(int64_t offset, const void* bytes, size_t length) {
  flush();
  if (::pwrite(fd_, bytes, length, offset) != static_cast<ssize_t>(length)) {
    throw Failure(errno == ENOSPC ? "DISK_FULL" : "IO", errnoText("cannot write", path_));
  }
}

void FileWriter::finish() {
  flush();
  if (::fsync(fd_) != 0) throw Failure("IO", errnoText("cannot fsync", path_));
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw Failure("IO", errnoText("cannot close", path_));
  }
  fd_ = -1;
}

size_t RangeReader::read(void* into, size_t length) {
  if (position_ >= end_) return 0;
  const size_t want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(length), end_ - position_));
  for (;;) {
    const ssize_t n = ::pread(fd_, into, want, position_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Failure("IO", std::string("cannot read the patch: ") + std::strerror(errno));
    if (n == 0) throw Failure("CORRUPT_PATCH", "the patch is shorter than its header says");
    position_ += n;
    return static_cast<size_t>(n);
  }
}

}  // namespace delta

// The classic bsdiff 4 search (Percival 2003) over a suffix array built by SA-IS, writing
// either the BSDIFF40 format that stock `bspatch` reads (a 32-byte header, then three bzip2
// streams: control triples, byte-wise differences, extra bytes) or bsdiff-lzma (the same
// search, its streams coded tighter and compressed by xz; see format.hpp). The streams are
// compressed by threads of their own while the search goes on, each into a scratch file,
// and then concatenated behind the header: no part of the patch is held whole in memory.
#include "diff.hpp"

#include <divsufsort.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "format.hpp"
#include "packed-stream.hpp"
#include "stream-writers.hpp"

namespace delta {
namespace {

int64_t matchLength(const uint8_t* a, int64_t aLength, const uint8_t* b, int64_t bLength) {
  const int64_t limit = std::min(aLength, bLength);
  int64_t i = 0;
  while (i + 8 <= limit) {
    uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y) return i + (__builtin_ctzll(x ^ y) >> 3);
    i += 8;
  }
  while (i < limit && a[i] == b[i]) i++;
  return i;
}

// Longest match of `target` among the old file's suffixes sa[low..high], by binary search.
int64_t longestMatch(const int32_t* sa, const uint8_t* old, int64_t oldSize, const uint8_t* target, int64_t targetSize,
                     int64_t low, int64_t high, int64_t* position) {
  while (high - low >= 2) {
    const int64_t middle = low + (high - low) / 2;
    const int64_t at = sa[middle];
    if (std::memcmp(old + at, target, static_cast<size_t>(std::min(oldSize - at, targetSize))) < 0) {
      low = middle;
    } else {
      high = middle;
    }
  }
  const int64_t x = matchLength(old + sa[low], oldSize - sa[low], target, targetSize);
  const int64_t y = matchLength(old + sa[high], oldSize - sa[high], target, targetSize);
  if (x > y) {
    *position = sa[low];
    return x;
  }
  *position = sa[high];
  return y;
}

// Where each two-byte prefix's suffixes start in the suffix array (65,537 bounds, computed
// from the old file by counting): a search starts inside its prefix's range, which spares
// the first 16 steps of the binary search, each a cache miss. The one-byte suffix at the end
// of the old file sorts just before the two-byte prefixes that begin with its byte.
class PrefixIndex {
 public:
  PrefixIndex(const uint8_t* old, int64_t oldSize) : start_(kKeys + 1, 0) {
    for (int64_t i = 0; i + 1 < oldSize; i++) start_[(old[i] << 8 | old[i + 1]) + 1]++;
    if (oldSize > 0) start_[(old[oldSize - 1] << 8) + 1]++;
    for (size_t k = 1; k <= kKeys; k++) start_[k] += start_[k - 1];
    if (oldSize > 0) lastKey_ = old[oldSize - 1] << 8;
  }
  // Inclusive range [low, high] of suffixes sharing the target's first two bytes, if any.
  bool range(const uint8_t* target, int64_t targetSize, int64_t* low, int64_t* high) const {
    if (targetSize < 2) return false;
    const size_t key = static_cast<size_t>(target[0] << 8 | target[1]);
    int64_t first = start_[key];
    // The one-byte suffix counted in this key's range is not one of them.
    if (lastKey_ >= 0 && key == static_cast<size_t>(lastKey_)) first++;
    const int64_t last = start_[key + 1] - 1;
    if (last < first) return false;
    *low = first;
    *high = last;
    return true;
  }

 private:
  static constexpr size_t kKeys = 1 << 16;
  std::vector<int64_t> start_;
  int64_t lastKey_ = -1;
};

// How far the search moves through the new file between two releases of its pages (a
// quarter MiB: the window behind the search stays small beside the 5 × old of the sort).
constexpr int64_t kReleaseStep = 1 << 18;

void appendFile(FileWriter& out, const std::string& path) {
  MappedFile part(path);
  out.write(part.data(), static_cast<size_t>(part.size()));
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void checkSizes(int64_t oldSize, int64_t newSize) {
  if (oldSize >= kMaxInputBytes || newSize >= kMaxInputBytes) {
    throw Failure("TOO_LARGE", "the engine takes inputs under 2 GiB (32-bit suffix array)");
  }
}

Format formatNamed(const std::string& name) {
  if (name == "bsdiff40") return Format::Bsdiff40;
  if (name == "bsdiff-lzma") return Format::BsdiffLzma;
  throw Failure("USAGE", "unknown patch format " + name + " (bsdiff40 or bsdiff-lzma)");
}

DiffStats writeDiff(const std::string& oldPath, const std::string& newPath, const std::string& patchPath, Format format) {
  const auto started = std::chrono::steady_clock::now();
  DiffStats stats;
  MappedFile oldFile(oldPath);
  MappedFile newFile(newPath);
  const uint8_t* old = oldFile.data();
  const uint8_t* target = newFile.data();
  const int64_t oldSize = oldFile.size();
  const int64_t newSize = newFile.size();
  checkSizes(oldSize, newSize);

  std::vector<int32_t> sa(static_cast<size_t>(oldSize));
  if (oldSize > 0 && divsufsort(old, sa.data(), static_cast<saidx_t>(oldSize)) != 0) throw Failure("NO_MEMORY", "divsufsort could not sort the old file");
  const PrefixIndex prefixes(old, oldSize);
  stats.sortSeconds = secondsSince(started);

  const std::string ctrlPath = patchPath + ".ctrl";
  const std::string diffPath = patchPath + ".diff";
  const std::string extraPath = patchPath + ".extra";
  struct Cleanup {
    std::vector<std::string> paths;
    ~Cleanup() {
      for (const auto& path : paths) ::unlink(path.c_str());
    }
  } cleanup{{ctrlPath, diffPath, extraPath}};
  int64_t ctrlBytes, diffBytes, extraBytes;
  {
    const Codec codec = format == Format::Bsdiff40 ? Codec::Bzip2 : Codec::Xz;
    PackedStream ctrlStream(ctrlPath, codec);
    PackedStream diffStream(diffPath, codec);
    PackedStream extraStream(extraPath, codec);
    auto diffs = std::make_unique<DiffWriter>(diffStream, format);

    int64_t scan = 0, length = 0, position = 0;
    int64_t lastScan = 0, lastPosition = 0, lastOffset = 0;
    int64_t releasedUpTo = 0;
    while (scan < newSize) {
      int64_t oldScore = 0;
      int64_t scoreScan = scan += length;
      for (; scan < newSize; scan++) {
        length = 0;
        if (oldSize > 0) {
          int64_t low = 0, high = oldSize - 1;
          prefixes.range(target + scan, newSize - scan, &low, &high);
          length = longestMatch(sa.data(), old, oldSize, target + scan, newSize - scan, low, high, &position);
        }
        for (; scoreScan < scan + length; scoreScan++) {
          if (scoreScan + lastOffset < oldSize && old[scoreScan + lastOffset] == target[scoreScan]) oldScore++;
        }
        if ((length == oldScore && length != 0) || length > oldScore + 8) break;
        if (scan + lastOffset < oldSize && old[scan + lastOffset] == target[scan]) oldScore--;
      }
      if (length == oldScore && scan != newSize) continue;

      // Extend the previous match forwards and this one backwards, where they score best.
      int64_t forward = 0;
      for (int64_t i = 0, score = 0, best = 0; lastScan + i < scan && lastPosition + i < oldSize;) {
        if (old[lastPosition + i] == target[lastScan + i]) score++;
        i++;
        if (score * 2 - i > best * 2 - forward) {
          best = score;
          forward = i;
        }
      }
      int64_t backward = 0;
      if (scan < newSize) {
        for (int64_t i = 1, score = 0, best = 0; scan >= lastScan + i && position >= i; i++) {
          if (old[position - i] == target[scan - i]) score++;
          if (score * 2 - i > best * 2 - backward) {
            best = score;
            backward = i;
          }
        }
      }
      if (lastScan + forward > scan - backward) {
        const int64_t overlap = (lastScan + forward) - (scan - backward);
        int64_t score = 0, best = 0, split = 0;
        for (int64_t i = 0; i < overlap; i++) {
          if (target[lastScan + forward - overlap + i] == old[lastPosition + forward - overlap + i]) score++;
          if (target[scan - backward + i] == old[position - backward + i]) score--;
          if (score > best) {
            best = score;
            split = i + 1;
          }
        }
        forward += split - overlap;
        backward -= split;
      }

      const int64_t extraLength = (scan - backward) - (lastScan + forward);
      diffs->add(target + lastScan, old + lastPosition, forward);
      extraStream.write(target + lastScan + forward, static_cast<size_t>(extraLength));
      writeControl(ctrlStream, format, forward, extraLength, (position - backward) - (lastPosition + forward));
      stats.controls++;

      lastScan = scan - backward;
      lastPosition = position - backward;
      lastOffset = position - scan;
      // Nothing before lastScan is read again (the streams copied it): the new file's pages
      // behind it leave the resident set, which keeps the peak near 5 × the old file.
      if (lastScan - releasedUpTo >= kReleaseStep) {
        newFile.releaseBefore(lastScan);
        releasedUpTo = lastScan;
      }
    }
    stats.scanSeconds = secondsSince(started) - stats.sortSeconds;
    // The suffix array is not needed for the rest: give its memory back before bzip2 ends.
    std::vector<int32_t>().swap(sa);
    diffs->finish();
    ctrlBytes = ctrlStream.finish();
    diffBytes = diffStream.finish();
    extraBytes = extraStream.finish();
  }

  FileWriter patch(patchPath);
  uint8_t header[kLzmaHeaderBytes];
  if (format == Format::Bsdiff40) {
    std::memcpy(header, kMagic, 8);
    writeOffset(ctrlBytes, header + 8);
    writeOffset(diffBytes, header + 16);
    writeOffset(newSize, header + 24);
    patch.write(header, kHeaderBytes);
  } else {
    std::memcpy(header, kLzmaMagic, 8);
    writeU64(static_cast<uint64_t>(newSize), header + 8);
    writeU64(static_cast<uint64_t>(ctrlBytes), header + 16);
    writeU64(static_cast<uint64_t>(diffBytes), header + 24);
    writeU64(static_cast<uint64_t>(extraBytes), header + 32);
    patch.write(header, kLzmaHeaderBytes);
  }
  appendFile(patch, ctrlPath);
  appendFile(patch, diffPath);
  appendFile(patch, extraPath);
  patch.finish();
  stats.patchBytes = patch.written();
  stats.totalSeconds = secondsSince(started);
  return stats;
}

}  // namespace delta

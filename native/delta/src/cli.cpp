// updater-delta: the engine as a program of its own, so the server runs each generation in a
// child process (a crash of native code ends that child, never the server).
//
//   updater-delta diff OLD NEW PATCH [FORMAT]
//                                        write the patch (bsdiff40, the default, or
//                                        bsdiff-lzma), then verify it rebuilds NEW
//   updater-delta verify OLD PATCH NEW   apply PATCH to OLD, compare with NEW
//   updater-delta patch OLD PATCH OUT    apply PATCH to OLD into OUT
//   updater-delta sa-check SEED ROUNDS   compare libdivsufsort with a naive sort on random
//                                        strings (the library as built and linked here)
//
// One JSON line on stdout on success; on failure {"code","message"} on stderr and exit 2.
#include <divsufsort.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "apply.hpp"
#include "diff.hpp"
#include "io.hpp"

namespace {

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Random strings over small and full alphabets, sorted both ways.
void saCheck(unsigned seed, int rounds) {
  std::mt19937 random(seed);
  for (int round = 0; round < rounds; round++) {
    const int32_t n = static_cast<int32_t>(random() % 300);
    const unsigned alphabet = 1 + random() % (round % 3 == 0 ? 2 : round % 3 == 1 ? 4 : 256);
    std::vector<uint8_t> text(static_cast<size_t>(n));
    for (auto& c : text) c = static_cast<uint8_t>(random() % alphabet);
    std::vector<int32_t> sa(static_cast<size_t>(n));
    if (n > 0 && divsufsort(text.data(), sa.data(), n) != 0) throw delta::Failure("SA_WRONG", "divsufsort failed");
    std::vector<int32_t> naive(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; i++) naive[i] = i;
    std::sort(naive.begin(), naive.end(), [&](int32_t a, int32_t b) {
      return std::lexicographical_compare(text.begin() + a, text.end(), text.begin() + b, text.end());
    });
    if (sa != naive) throw delta::Failure("SA_WRONG", "suffix array differs in round " + std::to_string(round));
  }
}

// The server runs this program from a diff thread. If the server dies (kill -9, an out-of-memory
// kill), the kernel ends this process too: an orphan would keep a core and gigabytes busy for
// nothing, and write its patch into the work directory after a restarted server tidied it.
// The server names itself in UPDATER_DELTA_PARENT, so a parent already gone before the signal
// was armed (the process then belongs to a reaper) is noticed as well.
void endWithParent() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const char* parent = std::getenv("UPDATER_DELTA_PARENT");
  if (parent != nullptr && std::to_string(::getppid()) != parent) std::_Exit(3);
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "diff" && (argc == 5 || argc == 6)) {
    const delta::Format format = argc == 6 ? delta::formatNamed(argv[5]) : delta::Format::Bsdiff40;
    const delta::DiffStats stats = delta::writeDiff(argv[2], argv[3], argv[4], format);
    const auto verifyStart = std::chrono::steady_clock::now();
    delta::verifyPatch(argv[2], argv[4], argv[3]);
    std::printf("{\"patchBytes\":%lld,\"controls\":%lld,\"sortSeconds\":%.3f,\"scanSeconds\":%.3f,\"diffSeconds\":%.3f,\"verifySeconds\":%.3f}\n",
                static_cast<long long>(stats.patchBytes), static_cast<long long>(stats.controls), stats.sortSeconds,
                stats.scanSeconds, stats.totalSeconds, secondsSince(verifyStart));
    return 0;
  }
  if (command == "verify" && argc == 5) {
    delta::verifyPatch(argv[2], argv[3], argv[4]);
    std::printf("{\"verified\":true}\n");
    return 0;
  }
  if (command == "patch" && argc == 5) {
    const int64_t size = delta::writePatched(argv[2], argv[3], argv[4]);
    std::printf("{\"bytes\":%lld}\n", static_cast<long long>(size));
    return 0;
  }
  if (command == "sa-check" && argc == 4) {
    saCheck(static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)), std::atoi(argv[3]));
    std::printf("{\"checked\":%d}\n", std::atoi(argv[3]));
    return 0;
  }
  throw delta::Failure("USAGE", "usage: updater-delta diff OLD NEW PATCH [bsdiff40|bsdiff-lzma] | verify OLD PATCH NEW | patch OLD PATCH OUT | sa-check SEED ROUNDS");
}

}  // namespace

int main(int argc, char** argv) {
  endWithParent();
  try {
    return run(argc, argv);
  } catch (const delta::Failure& failure) {
    std::fprintf(stderr, "{\"code\":%s,\"message\":%s}\n", jsonString(failure.code()).c_str(), jsonString(failure.what()).c_str());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "{\"code\":\"NO_MEMORY\",\"message\":\"out of memory\"}\n");
  } catch (const std::exception& err) {
    std::fprintf(stderr, "{\"code\":\"INTERNAL\",\"message\":%s}\n", jsonString(err.what()).c_str());
  }
  return 2;
}

// Suffix array by induced sorting (SA-IS, Nong, Zhang and Chan 2009): linear time, 32-bit
// indices, and no working memory beyond the suffix array itself except one type bit per
// position and one bucket counter per alphabet symbol at each recursion level.
//
// The string has no sentinel: a virtual one, smaller than every symbol, follows the last
// position. The reduced string of each level lives in the unused upper half of the suffix
// array, so the recursion needs no extra array either.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace delta {

class TypeBits {
 public:
  explicit TypeBits(int32_t n) : bits_((static_cast<size_t>(n) + 7) / 8, 0) {}
  bool s(int32_t i) const { return (bits_[i >> 3] >> (i & 7)) & 1; }
  void setS(int32_t i) { bits_[i >> 3] |= static_cast<uint8_t>(1u << (i & 7)); }
  // An LMS position is an S-type position whose left neighbour is L-type.
  bool lms(int32_t i) const { return i > 0 && s(i) && !s(i - 1); }

 private:
  std::vector<uint8_t> bits_;
};

template <typename Char>
void bucketBounds(const Char* text, int32_t n, int32_t alphabet, std::vector<int32_t>& bucket, bool ends) {
  std::fill(bucket.begin(), bucket.end(), 0);
  for (int32_t i = 0; i < n; i++) bucket[static_cast<size_t>(text[i])]++;
  int32_t sum = 0;
  for (int32_t c = 0; c < alphabet; c++) {
    sum += bucket[c];
    bucket[c] = ends ? sum : sum - bucket[c];
  }
}

// Sorts all suffixes from the positions already placed (LMS suffixes at their bucket ends,
// empty slots 0): L-type suffixes left to right from the bucket heads, then S-type right to
// left from the ends. Instead of looking up type bits at random, a placed suffix j carries
// the type of j-1 in its sign (~j: "do not induce from me in this pass"), known from
// comparing text[j-1] with text[j] since the type of j is known when it is placed; the
// current bucket pointer is cached while consecutive symbols repeat.
constexpr int32_t kPrefetch = 32;

template <typename Char>
void induce(const Char* text, int32_t* sa, int32_t n, int32_t alphabet, std::vector<int32_t>& bucket) {
  bucketBounds(text, n, alphabet, bucket, false);
  // The virtual sentinel sorts first; its left neighbour n-1 is always L-type.
  int32_t j = n - 1;
  size_t c1 = static_cast<size_t>(text[j]);
  int32_t* b = sa + bucket[c1];
  *b++ = (j > 0 && static_cast<size_t>(text[j - 1]) < c1) ? ~j : j;
  for (int32_t i = 0; i < n; i++) {
    // The symbol read next is at a random place: ask for it a few steps ahead.
    if (i + kPrefetch < n) __builtin_prefetch(text + (sa[i + kPrefetch] > 0 ? sa[i + kPrefetch] - 1 : 0));
    j = sa[i];
    sa[i] = ~j;
    if (j > 0) {
      --j;
      const size_t c0 = static_cast<size_t>(text[j]);
      if (c0 != c1) {
        bucket[c1] = static_cast<int32_t>(b - sa);
        b = sa + bucket[c1 = c0];
      }
      *b++ = (j > 0 && static_cast<size_t>(text[j - 1]) < c1) ? ~j : j;
    }
  }
  bucketBounds(text, n, alphabet, bucket, true);
  c1 = 0;
  b = sa + bucket[c1];
  for (int32_t i = n - 1; i >= 0; i--) {
    if (i >= kPrefetch) __builtin_prefetch(text + (sa[i - kPrefetch] > 0 ? sa[i - kPrefetch] - 1 : 0));
    j = sa[i];
    if (j > 0) {
      --j;
      const size_t c0 = static_cast<size_t>(text[j]);
      if (c0 != c1) {
        bucket[c1] = static_cast<int32_t>(b - sa);
        b = sa + bucket[c1 = c0];
      }
      *--b = (j == 0 || static_cast<size_t>(text[j - 1]) > c1) ? ~j : j;
    } else {
      sa[i] = ~j;
    }
  }
}

// True when the LMS substrings starting at a and b are equal (same symbols and types up to and
// including the next LMS position). The one reaching the virtual sentinel equals no other.
template <typename Char>
bool sameLmsSubstring(const Char* text, int32_t n, const TypeBits& types, int32_t a, int32_t b) {
  for (int32_t d = 0;; d++) {
    if (a + d == n || b + d == n) return false;
    if (text[a + d] != text[b + d] || types.s(a + d) != types.s(b + d)) return false;
    if (d > 0 && (types.lms(a + d) || types.lms(b + d))) return types.lms(a + d) && types.lms(b + d);
  }
}

template <typename Char>
void sais(const Char* text, int32_t* sa, int32_t n, int32_t alphabet) {
  if (n == 0) return;
  if (n == 1) {
    sa[0] = 0;
    return;
  }
  TypeBits types(n);
  // Position n-1 is L-type (the sentinel after it is smaller); walk leftwards.
  for (int32_t i = n - 2; i >= 0; i--) {
    if (text[i] < text[i + 1] || (text[i] == text[i + 1] && types.s(i + 1))) types.setS(i);
  }
  std::vector<int32_t> bucket(static_cast<size_t>(alphabet));

  // Stage 1: sort the LMS substrings by one induced sort from LMS positions in text order.
  std::fill(sa, sa + n, 0);
  bucketBounds(text, n, alphabet, bucket, true);
  for (int32_t i = 1; i < n; i++) {
    if (types.lms(i)) sa[--bucket[static_cast<size_t>(text[i])]] = i;
  }
  induce(text, sa, n, alphabet, bucket);

  // Compact the sorted LMS positions into the head of sa.
  int32_t lmsCount = 0;
  for (int32_t i = 0; i < n; i++) {
    if (types.lms(sa[i])) sa[lmsCount++] = sa[i];
  }
  // Name them: equal substrings share a name. Names go to sa[lmsCount + p/2] (LMS positions
  // are at least two apart, so the slots are distinct and fit in the upper half).
  std::fill(sa + lmsCount, sa + n, -1);
  int32_t names = 0;
  int32_t previous = -1;
  for (int32_t i = 0; i < lmsCount; i++) {
    const int32_t p = sa[i];
    if (previous < 0 || !sameLmsSubstring(text, n, types, p, previous)) names++;
    previous = p;
    sa[lmsCount + p / 2] = names - 1;
  }
  // Gather the names in text order at the tail: the reduced string.
  for (int32_t i = n - 1, j = n - 1; i >= lmsCount; i--) {
    if (sa[i] >= 0) sa[j--] = sa[i];
  }

  // Stage 2: sort the reduced string's suffixes, recursively when names repeat.
  int32_t* reduced = sa + n - lmsCount;
  int32_t* reducedSa = sa;
  if (names < lmsCount) {
    sais<int32_t>(reduced, reducedSa, lmsCount, names);
  } else {
    for (int32_t i = 0; i < lmsCount; i++) reducedSa[reduced[i]] = i;
  }

  // Stage 3: map reduced ranks back to LMS positions, place them at their bucket ends in
  // sorted order, and induce the full suffix array.
  for (int32_t i = 1, j = 0; i < n; i++) {
    if (types.lms(i)) reduced[j++] = i;
  }
  for (int32_t i = 0; i < lmsCount; i++) reducedSa[i] = reduced[reducedSa[i]];
  std::fill(sa + lmsCount, sa + n, 0);
  bucketBounds(text, n, alphabet, bucket, true);
  for (int32_t i = lmsCount - 1; i >= 0; i--) {
    const int32_t p = sa[i];
    sa[i] = 0;
    sa[--bucket[static_cast<size_t>(text[p])]] = p;
  }
  induce(text, sa, n, alphabet, bucket);
}

}  // namespace delta

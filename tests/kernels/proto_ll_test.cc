// The LL and LL128 wire formats (kernels/proto_ll.h): NCCL's constants, flag values and cleaning rule,
// and pack/unpack round trips over odd byte counts.
#include "kernels/proto_ll.h"

#include "kernels/dtypes.h"
#include "kernels/primitives_ll.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace cclab {
namespace {

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 131 + seed * 7 + 1);
  return v;
}

// memcmp == 0, for any n (an empty vector's data() may be null, which memcmp must not get).
bool same_bytes(const void* a, const void* b, size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

TEST(ProtoLL, NcclConstants) {
  EXPECT_EQ(kLLSliceLines, 4096);
  EXPECT_EQ(kLLBuffLines, 32768);
  EXPECT_EQ(kLLBuffSize, 512 * 1024);
  EXPECT_EQ(ProtoLL::step_bytes(kLLBuffSize), 64 * 1024);
  EXPECT_EQ(ProtoLL::lines_per_step(ProtoLL::step_bytes(kLLBuffSize)), kLLSliceLines);
  EXPECT_EQ(ProtoLL::max_chunk_bytes(kLLBuffSize), 32u * 1024);
  EXPECT_EQ(kLLCleanMask, 0x7ffffff8u);
  EXPECT_EQ(kLL128BuffElems, 614400);
  EXPECT_EQ(kLL128BuffSize, 4915200);
  EXPECT_EQ(ProtoLL128::step_bytes(kLL128BuffSize), 614400);
  EXPECT_EQ(ProtoLL128::max_chunk_bytes(kLL128BuffSize), 576000u);
  EXPECT_EQ(sizeof(LLLine), 16u);
  EXPECT_EQ(sizeof(LL128Line), 128u);
  EXPECT_EQ(ProtoLL::kGrainBytes, 16);
  EXPECT_EQ(ProtoLL128::kGrainBytes, 1920);
}

TEST(ProtoLL, LineLayoutIsNcclFifoLine) {
  const unsigned char b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const LLLine l = ll_make_line(b, 8, 0xabcdef01u);
  EXPECT_EQ(l.f.data1, 0x04030201u);
  EXPECT_EQ(l.f.data2, 0x08070605u);
  EXPECT_EQ(l.f.flag1, 0xabcdef01u);
  EXPECT_EQ(l.f.flag2, 0xabcdef01u);
  // As bytes: data1, flag1, data2, flag2.
  unsigned char raw[16];
  std::memcpy(raw, &l, 16);
  EXPECT_EQ(raw[0], 1);
  EXPECT_EQ(raw[4], 0x01);
  EXPECT_EQ(raw[7], 0xab);
  EXPECT_EQ(raw[8], 5);
  EXPECT_EQ(raw[15], 0xab);
  // A short line is zero-padded.
  const LLLine s = ll_make_line(b, 3, 7);
  EXPECT_EQ(s.f.data1, 0x030201u);
  EXPECT_EQ(s.f.data2, 0u);
}

TEST(ProtoLL, FlagsAndCleaning) {
  EXPECT_EQ(ll_flag(0), 1u);
  EXPECT_EQ(ll_flag(41), 42u);
  EXPECT_EQ(ll_flag(0xfffffffeull), 0xffffffffu);
  EXPECT_EQ(ll_flag(0xffffffffull), 0u);  // NCCL_LL_FLAG wraps modulo 2^32
  EXPECT_EQ(ll_flag(0x100000000ull), 1u);
  EXPECT_FALSE(ll_needs_clean(0));
  EXPECT_FALSE(ll_needs_clean(0x7ffffff7));
  for (uint64_t s = 0x7ffffff8; s <= 0x7fffffff; ++s) EXPECT_TRUE(ll_needs_clean(s)) << s;
  EXPECT_FALSE(ll_needs_clean(0x80000000));
  for (uint64_t s = 0xfffffff8; s <= 0xffffffff; ++s) EXPECT_TRUE(ll_needs_clean(s)) << s;
  EXPECT_FALSE(ll_needs_clean(0x100000000ull));
  EXPECT_TRUE(ll_needs_clean(0x17ffffff8ull));
  // The clean window covers one whole lap of the FIFO: every slot once.
  int slots = 0;
  for (uint64_t s = 0x7ffffff0; s < 0x80000010; ++s)
    if (ll_needs_clean(s)) slots |= 1 << (s % kNcclSteps);
  EXPECT_EQ(slots, 0xff);
  EXPECT_EQ(ll128_flag(0), 1u);
  EXPECT_EQ(ll128_flag(0xffffffffull), 0x100000000ull);  // 64-bit: never wraps in practice
}

TEST(ProtoLL, LineCounts) {
  EXPECT_EQ(ll_lines(0), 0u);
  EXPECT_EQ(ll_lines(1), 1u);
  EXPECT_EQ(ll_lines(8), 1u);
  EXPECT_EQ(ll_lines(9), 2u);
  EXPECT_EQ(ll_lines(32768), 4096u);
  EXPECT_EQ(ll128_lines(0), 0u);
  EXPECT_EQ(ll128_lines(1), 1u);
  EXPECT_EQ(ll128_lines(120), 1u);
  EXPECT_EQ(ll128_lines(121), 2u);
  EXPECT_EQ(ll128_lines(576000), 4800u);
}

TEST(ProtoLL, LLRoundTrips) {
  for (size_t bytes : {0, 1, 3, 7, 8, 9, 15, 16, 17, 1001, 4096, 32768}) {
    const auto src = pattern(bytes, static_cast<unsigned>(bytes));
    std::vector<LLLine> lines(ll_lines(bytes) + 1);
    const uint32_t flag = ll_flag(bytes * 3);
    ASSERT_EQ(ll_pack(src.data(), bytes, lines.data(), flag), ll_lines(bytes));
    for (size_t i = 0; i < ll_lines(bytes); ++i) EXPECT_TRUE(ll_line_has_flag(lines[i], flag));
    std::vector<unsigned char> dst(bytes + 8, 0xee);
    ASSERT_TRUE(ll_unpack(lines.data(), bytes, dst.data(), flag)) << bytes;
    EXPECT_TRUE(same_bytes(src.data(), dst.data(), bytes)) << bytes;
    EXPECT_EQ(dst[bytes], 0xee) << "unpack wrote past the slice";
    if (bytes > 0) {
      EXPECT_FALSE(ll_unpack(lines.data(), bytes, dst.data(), flag + 1));
      // Padding of the last line is zero.
      if (bytes % 8) {
        unsigned char tail[8];
        ll_line_payload(lines[ll_lines(bytes) - 1], tail, 8);
        for (size_t b = bytes % 8; b < 8; ++b) EXPECT_EQ(tail[b], 0);
      }
    }
  }
}

TEST(ProtoLL, LLHalfFlags) {
  const unsigned char b[8] = {9, 9, 9, 9, 9, 9, 9, 9};
  LLLine l = ll_make_line(b, 8, 5);
  EXPECT_TRUE(ll_half_has_flag(l.v[0], 5));
  EXPECT_TRUE(ll_half_has_flag(l.v[1], 5));
  l.f.flag2 = 4;  // second half still from an older step: the line is not ready
  EXPECT_FALSE(ll_line_has_flag(l, 5));
  EXPECT_TRUE(ll_half_has_flag(l.v[0], 5));
  EXPECT_FALSE(ll_half_has_flag(l.v[1], 5));
  EXPECT_EQ(ll_half(0x11223344u, 0x55667788u), 0x5566778811223344ull);
}

TEST(ProtoLL, LL128RoundTrips) {
  for (size_t bytes : {0, 1, 7, 8, 119, 120, 121, 239, 240, 1000, 1920, 123457}) {
    const auto src = pattern(bytes, static_cast<unsigned>(bytes) + 3);
    std::vector<LL128Line> lines(ll128_lines(bytes) + 1);
    const uint64_t flag = ll128_flag(bytes + 0x100000000ull);
    ASSERT_EQ(ll128_pack(src.data(), bytes, lines.data(), flag), ll128_lines(bytes));
    for (size_t i = 0; i < ll128_lines(bytes); ++i) {
      EXPECT_TRUE(ll128_line_has_flag(lines[i], flag));
      EXPECT_EQ(lines[i].v[15], flag) << "the flag is the last 8 bytes";
    }
    std::vector<unsigned char> dst(bytes + 8, 0xee);
    ASSERT_TRUE(ll128_unpack(lines.data(), bytes, dst.data(), flag)) << bytes;
    EXPECT_TRUE(same_bytes(src.data(), dst.data(), bytes)) << bytes;
    EXPECT_EQ(dst[bytes], 0xee);
    if (bytes > 0) {
      EXPECT_FALSE(ll128_unpack(lines.data(), bytes, dst.data(), flag - 1));
      // The payload is the first 120 bytes of each line, in order.
      EXPECT_EQ(0, std::memcmp(&lines[0], src.data(), bytes < 120 ? bytes : 120));
    }
  }
}

// NCCL's line groups write a line as 8 parts of 16 bytes, the flag in the last part's second word:
// for every payload length of a line, the 8 parts made from the words a lane holds (junk past the
// payload included: ll128_part_words zero-pads) give ll128_pack's line byte for byte, and reading the
// parts back gives the payload.
TEST(ProtoLL, LL128PartsMakeThePackedLine) {
  EXPECT_EQ(kLL128Parts * kLL128PartBytes, kLL128LineBytes);
  int payload = 0;
  for (int p = 0; p < kLL128Parts; ++p) payload += ll128_part_payload(p);
  EXPECT_EQ(payload, kLL128LinePayload);
  const auto src = pattern(kLL128LinePayload, 9);
  const uint64_t flag = ll128_flag(0x123456789ull);
  for (size_t n = 0; n <= static_cast<size_t>(kLL128LinePayload); ++n) {
    LL128Line packed{};  // n == 0: every part empty, zeros and the flag
    packed.v[kLL128LineElems - 1] = flag;
    if (n > 0) {
      ASSERT_EQ(ll128_pack(src.data(), n, &packed, flag), 1u);
    }
    LL128Line parts;
    std::memset(&parts, 0xcd, sizeof(parts));
    unsigned char back[kLL128LinePayload] = {};
    for (int p = 0; p < kLL128Parts; ++p) {
      const size_t first = static_cast<size_t>(p) * kLL128PartBytes;
      const size_t k = n <= first ? 0 : (n - first < static_cast<size_t>(ll128_part_payload(p))
                                             ? n - first
                                             : static_cast<size_t>(ll128_part_payload(p)));
      // As a lane holds the part: its two words, with junk past its k payload bytes.
      unsigned char raw[kLL128PartBytes];
      std::memset(raw, 0xa5, sizeof(raw));
      std::memcpy(raw, src.data() + first, k);
      ll128_part_words(load_le_bytes(raw, 8), load_le_bytes(raw + 8, 8), k, p, flag, &parts.v[2 * p],
                       &parts.v[2 * p + 1]);
      store_le_bytes(parts.v[2 * p], back + first, k);  // the payload read back (the flag is not payload)
      if (k > 8) store_le_bytes(parts.v[2 * p + 1], back + first + 8, k - 8);
    }
    EXPECT_EQ(0, std::memcmp(&packed, &parts, sizeof(parts))) << n << " payload bytes";
    EXPECT_EQ(0, std::memcmp(back, src.data(), n)) << n << " payload bytes";
    EXPECT_EQ(parts.v[kLL128LineElems - 1], flag);
  }
}

// The protocols' line operations through a minimal executor (plain loads and stores).
struct PlainExec {
  uint64_t load_u64(const uint64_t* p) const { return *p; }
  uint64_t load_u64_acquire(const uint64_t* p) const { return *p; }
  void store_u64(uint64_t* p, uint64_t v) const { *p = v; }
  void store_u64_release(uint64_t* p, uint64_t v) const { *p = v; }
};

TEST(ProtoLL, StoreLoadLineThroughExec) {
  PlainExec ex;
  const auto src = pattern(120, 5);
  unsigned char got[120];
  LLLine l{};
  ProtoLL::store_line(ex, &l, src.data(), 5, 9);
  EXPECT_FALSE(ProtoLL::load_line(ex, &l, got, 5, 8));
  ASSERT_TRUE(ProtoLL::load_line(ex, &l, got, 5, 9));
  EXPECT_EQ(0, std::memcmp(got, src.data(), 5));
  // By value (a lane's register): a word with junk past its 5 payload bytes stores the same line.
  LLLine lw{};
  ProtoLL::store_word(ex, &lw, load_le_bytes(src.data(), 5) | 0xa5a5a50000000000ull, 5, 9);
  EXPECT_EQ(0, std::memcmp(&lw, &l, sizeof(l)));
  ProtoLL::clean_line(ex, &l, 9);
  EXPECT_TRUE(ll_line_has_flag(l, ll_flag(9)));
  EXPECT_EQ(l.f.data1, 0u);
  LL128Line m{};
  ProtoLL128::store_line(ex, &m, src.data(), 120, 3);
  EXPECT_FALSE(ProtoLL128::load_line(ex, &m, got, 120, 2));
  ASSERT_TRUE(ProtoLL128::load_line(ex, &m, got, 120, 3));
  EXPECT_EQ(0, std::memcmp(got, src.data(), 120));
  EXPECT_FALSE(ProtoLL128::needs_clean(0x7ffffff8));
}

// A line's payload words as elements and back, by value (the LL / LL128 loops on a block executor):
// element j is bytes [j * sizeof(T), (j + 1) * sizeof(T)) of the little-endian words.
template <typename T, size_t W>
void expect_words_elems_round_trip(uint64_t seed) {
  constexpr size_t N = 8 * W / sizeof(T);
  uint64_t w[W];
  unsigned char bytes[8 * W];
  for (size_t i = 0; i < W; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    w[i] = seed;
    for (size_t b = 0; b < 8; ++b) bytes[8 * i + b] = static_cast<unsigned char>(seed >> (8 * b));
  }
  T e[N];
  words_to_elems(w, e);
  for (size_t j = 0; j < N; ++j)
    EXPECT_EQ(0, std::memcmp(&e[j], bytes + j * sizeof(T), sizeof(T))) << sizeof(T) << "-byte element " << j;
  uint64_t back[W];
  elems_to_words(e, back);
  for (size_t i = 0; i < W; ++i) EXPECT_EQ(back[i], w[i]) << sizeof(T) << "-byte elements, word " << i;
}

TEST(ProtoLL, LineWordsAsElementsRoundTrip) {
  expect_words_elems_round_trip<uint8_t, 1>(1);
  expect_words_elems_round_trip<half_t, 1>(2);
  expect_words_elems_round_trip<float, 1>(3);
  expect_words_elems_round_trip<double, 1>(4);
  expect_words_elems_round_trip<int8_t, 2>(5);
  expect_words_elems_round_trip<bfloat16_t, 2>(6);
  expect_words_elems_round_trip<int32_t, 2>(7);
  expect_words_elems_round_trip<uint64_t, 2>(8);
  EXPECT_EQ(le_low_bytes(0x0123456789abcdefull, 0), 0u);
  EXPECT_EQ(le_low_bytes(0x0123456789abcdefull, 3), 0xabcdefull);
  EXPECT_EQ(le_low_bytes(0x0123456789abcdefull, 8), 0x0123456789abcdefull);
}

}  // namespace
}  // namespace cclab

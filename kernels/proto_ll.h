// kernels/proto_ll.h - the LL and LL128 protocols as types: NCCL's wire formats (ncclLLFifoLine and the
// 128-byte LL128 line), buffer and step sizes, flag values, and pure functions that pack a slice of bytes
// into lines and check a line's flag. Primitives<T, ProtoLL, Exec> / <T, ProtoLL128, Exec>
// (primitives_ll.h, primitives_ll128.h) move data through these lines.
//
// Both protocols signal readiness with flags inside the data lines instead of the tail counter: a
// receiver polls each line until it carries the step's flag. Credits still travel by the head counter
// (the receiver posts head = step + 1 after consuming a step; the sender waits for head + NCCL_STEPS
// >= step + 1 before writing a step), as in NCCL's prims_ll.h / prims_ll128.h.
//
// Memory ordering each format relies on:
//  LL   GPU:  a line is written with one 16-byte volatile store; NCCL relies only on each 8-byte half
//             {data, flag} arriving whole (8-byte store atomicity, also over NVLink and PCIe), so a
//             half whose flag matches carries that step's data. No fence between data and flag.
//       host: each {data, flag} half is stored and loaded as ONE 8-byte atomic (relaxed is enough: the
//             data travels in the same atomic word as its flag), so a matching flag implies its data.
//  LL128 GPU: NCCL's scheme. A line is 8 parts of 16 bytes (kLL128Parts); 8 consecutive lanes (a line
//             group) each move one part with one 16-byte volatile store or load, the last lane's part
//             (kLL128FlagPart, NCCL_LL128_FLAGTHREAD) holding data word 14 and the flag word. A warp's
//             store instruction thus writes 4 whole lines, and NCCL relies on each aligned 128-byte
//             line reaching the peer whole (NVLink store atomicity), so the flag cannot be seen before
//             the line's 120 data bytes: no fence between data and flag. The receiving group loads its
//             parts, the flag lane compares the flag, a vote over the group repeats the loads until the
//             flag is right, and then every lane loads its part again (its first load may have raced
//             ahead of the line). Hence LL128 is only enabled where line atomicity holds.
//       host: one lane per line: the 15 data words are stored first, then the flag word with release;
//             the receiver loads the flag with acquire and only then reads the data words. (Host
//             threads playing a block's line groups give the group the same guarantee with a group
//             barrier before the flag part's release store; see kernels/block_exec.h.)
//             Either way the bytes on the wire are the same: ll128_pack's line.
// Reuse of a slot is ordered by the head counter as in Simple: the receiver's reads of step s happen
// before its release store of head = s + 1, which the sender acquires before rewriting slot s % 8.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/fifo.h"
#include "kernels/platform.h"

namespace cclab {

// ---- NCCL's constants (include/device.h, init.cc computeBuffSizes) ----------------------------------

constexpr int kLLLinesPerThread = 8;                                  // NCCL_LL_LINES_PER_THREAD
constexpr int kLLMaxNThreads = 512;                                   // NCCL_LL_MAX_NTHREADS
constexpr int kLLSliceLines = kLLLinesPerThread * kLLMaxNThreads;     // NCCL_LL_SLICE_LINES: lines per step
constexpr int kLLBuffLines = kLLSliceLines * kNcclSteps;              // NCCL_LL_BUFF_LINES
constexpr int kLLLineBytes = 16;                                      // sizeof(union ncclLLFifoLine)
constexpr int kLLLinePayload = 8;                                     // data1 + data2
constexpr int kLLBuffSize = kLLBuffLines * kLLLineBytes;              // NCCL_LL_BUFF_SIZE = 512 KiB
constexpr uint64_t kLLFlagMax = 0x100000000ull;                       // NCCL_LL_FLAG_MAX
constexpr uint64_t kLLCleanMask = 0x7ffffff8ull;                      // NCCL_LL_CLEAN_MASK
static_assert(kLLCleanMask % kNcclSteps == 0, "the clean window must cover whole FIFO laps");

constexpr int kLL128LineBytes = 128;                                  // NCCL_LL128_LINESIZE
constexpr int kLL128LineElems = 16;                                   // NCCL_LL128_LINEELEMS (u64 words)
constexpr int kLL128DataElems = 15;                                   // NCCL_LL128_DATAELEMS
constexpr int kLL128LinePayload = kLL128DataElems * 8;                // 120 bytes
constexpr int kLL128MaxNThreads = 640;                                // NCCL_LL128_MAX_NTHREADS
constexpr int kLL128ElemsPerThread = 120;                             // NCCL_LL128_ELEMS_PER_THREAD
constexpr int kLL128SliceElems = kLL128ElemsPerThread * kLL128MaxNThreads;  // u64 words per step
constexpr int kLL128BuffElems = kLL128SliceElems * kNcclSteps;        // NCCL_LL128_BUFF_ELEMS
constexpr int kLL128BuffSize = kLL128BuffElems * 8;                   // NCCL_LL128_BUFF_SIZE = 4,915,200
static_assert(kLLBuffSize == 524288 && kLL128BuffSize == 4915200, "NCCL's default LL/LL128 buffers");

// ---- little-endian byte <-> word helpers (the wire is little-endian on every GPU and on x86/arm64) ---

// The first `n` (<= 8) bytes of p as the low bytes of a word; the rest zero (padding of a short line).
CCLAB_HD inline uint64_t load_le_bytes(const unsigned char* p, size_t n) {
  uint64_t w = 0;
  for (size_t i = 0; i < n && i < 8; ++i) w |= static_cast<uint64_t>(p[i]) << (8 * i);
  return w;
}
CCLAB_HD inline void store_le_bytes(uint64_t w, unsigned char* p, size_t n) {
  for (size_t i = 0; i < n && i < 8; ++i) p[i] = static_cast<unsigned char>(w >> (8 * i));
}
// The first `n` bytes of a word (its low bytes); the rest zero, as load_le_bytes leaves them.
CCLAB_HD inline uint64_t le_low_bytes(uint64_t w, size_t n) { return n >= 8 ? w : w & ((uint64_t(1) << (8 * n)) - 1); }

// ---- LL -----------------------------------------------------------------------------------------------

// NCCL's union ncclLLFifoLine: 16 bytes, 8 of payload. v[0] = {data1, flag1}, v[1] = {data2, flag2}
// (little-endian: data in the low 32 bits, flag in the high 32 bits of each half).
union alignas(16) LLLine {
  struct Fields {
    uint32_t data1, flag1, data2, flag2;
  } f;
  uint64_t v[2];
};
static_assert(sizeof(LLLine) == kLLLineBytes, "LL line is 16 bytes");

// Flag of step s: NCCL_LL_FLAG(s + 1). The +1 keeps a zeroed buffer from matching step 0.
CCLAB_HD inline uint32_t ll_flag(uint64_t step) { return static_cast<uint32_t>((step + 1) % kLLFlagMax); }
// NCCL's incSend rule: when (step & NCCL_LL_CLEAN_MASK) == NCCL_LL_CLEAN_MASK, the sender rewrites every
// line of the step it did not fill (data 0, this step's flag). Those 8 steps just before the low 31 bits
// wrap cover all 8 slots, so after them no line holds a flag older than 2^31 steps, and the 32-bit flag
// wrapping around can never make a stale line look current.
CCLAB_HD inline bool ll_needs_clean(uint64_t step) { return (step & kLLCleanMask) == kLLCleanMask; }
// One {data, flag} half as the 8-byte word it is stored as.
CCLAB_HD inline uint64_t ll_half(uint32_t data, uint32_t flag) {
  return static_cast<uint64_t>(data) | (static_cast<uint64_t>(flag) << 32);
}
CCLAB_HD inline bool ll_half_has_flag(uint64_t half, uint32_t flag) {
  return static_cast<uint32_t>(half >> 32) == flag;
}
CCLAB_HD inline bool ll_line_has_flag(const LLLine& l, uint32_t flag) { return l.f.flag1 == flag && l.f.flag2 == flag; }
// Lines needed for `bytes` of payload.
CCLAB_HD inline size_t ll_lines(size_t bytes) { return (bytes + kLLLinePayload - 1) / kLLLinePayload; }

// A line's 8 payload bytes as one little-endian word: data1 low, data2 high. From the line's two
// {data, flag} halves, and back.
CCLAB_HD inline uint64_t ll_halves_word(uint64_t lo, uint64_t hi) { return (lo & 0xffffffffull) | (hi << 32); }
CCLAB_HD inline LLLine ll_word_line(uint64_t w, uint32_t flag) {
  LLLine l;
  l.v[0] = ll_half(static_cast<uint32_t>(w), flag);
  l.v[1] = ll_half(static_cast<uint32_t>(w >> 32), flag);
  return l;
}
// The line carrying `n` (<= 8) payload bytes from p, zero-padded.
CCLAB_HD inline LLLine ll_make_line(const unsigned char* p, size_t n, uint32_t flag) {
  return ll_word_line(load_le_bytes(p, n), flag);
}
// The first `n` (<= 8) payload bytes of a line.
CCLAB_HD inline void ll_line_payload(const LLLine& l, unsigned char* p, size_t n) {
  store_le_bytes(ll_halves_word(l.v[0], l.v[1]), p, n);
}
// Packs `bytes` from src into ll_lines(bytes) lines carrying `flag`; returns the line count.
CCLAB_HD inline size_t ll_pack(const void* src, size_t bytes, LLLine* dst, uint32_t flag) {
  const unsigned char* s = static_cast<const unsigned char*>(src);
  const size_t n = ll_lines(bytes);
  for (size_t i = 0; i < n; ++i) {
    const size_t o = i * kLLLinePayload;
    dst[i] = ll_make_line(s + o, bytes - o < kLLLinePayload ? bytes - o : kLLLinePayload, flag);
  }
  return n;
}
// Unpacks `bytes` from lines into dst; false (dst partly written) if a line does not carry `flag`.
CCLAB_HD inline bool ll_unpack(const LLLine* src, size_t bytes, void* dst, uint32_t flag) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const size_t n = ll_lines(bytes);
  for (size_t i = 0; i < n; ++i) {
    if (!ll_line_has_flag(src[i], flag)) return false;
    const size_t o = i * kLLLinePayload;
    ll_line_payload(src[i], d + o, bytes - o < kLLLinePayload ? bytes - o : kLLLinePayload);
  }
  return true;
}

// ---- LL128 --------------------------------------------------------------------------------------------

// A 128-byte LL128 line: words 0..14 carry 120 payload bytes, word 15 is the flag. (NCCL orders the
// payload words by the warp's register layout; here they are in order. Only the framing - 15 data
// words, flag last - is shared with the peer's format; both ends of a connection use the same order.)
struct alignas(kLL128LineBytes) LL128Line {
  uint64_t v[kLL128LineElems];
};
static_assert(sizeof(LL128Line) == kLL128LineBytes, "LL128 line is 128 bytes");

// Flag of step s: s + 1 as a full 64-bit word (NCCL's sendStep+1); it never wraps, so LL128 needs no
// cleaning.
CCLAB_HD inline uint64_t ll128_flag(uint64_t step) { return step + 1; }
CCLAB_HD inline bool ll128_line_has_flag(const LL128Line& l, uint64_t flag) {
  return l.v[kLL128LineElems - 1] == flag;
}
CCLAB_HD inline size_t ll128_lines(size_t bytes) { return (bytes + kLL128LinePayload - 1) / kLL128LinePayload; }

// Data words of the line carrying `n` (<= 120) bytes from p, zero-padded, into w[0..14].
CCLAB_HD inline void ll128_make_words(const unsigned char* p, size_t n, uint64_t* w) {
  for (int i = 0; i < kLL128DataElems; ++i) {
    const size_t o = static_cast<size_t>(i) * 8;
    w[i] = o < n ? load_le_bytes(p + o, n - o) : 0;
  }
}
CCLAB_HD inline void ll128_words_payload(const uint64_t* w, unsigned char* p, size_t n) {
  for (int i = 0; i < kLL128DataElems; ++i) {
    const size_t o = static_cast<size_t>(i) * 8;
    if (o < n) store_le_bytes(w[i], p + o, n - o);
  }
}
// ---- LL128 line parts (NCCL's 8-lane line groups) ----
// Part p of a line is words 2p and 2p+1: payload bytes [16p, 16p + ll128_part_payload(p)); the flag part
// carries payload word 14 and the flag word 15. So storing all 8 parts of a line writes ll128_pack's line.
constexpr int kLL128PartBytes = 16;
constexpr int kLL128Parts = kLL128LineBytes / kLL128PartBytes;       // 8 lanes per line
constexpr int kLL128FlagPart = kLL128Parts - 1;                      // NCCL_LL128_FLAGTHREAD, within a group
static_assert(kLL128Parts == 8 && kLL128FlagPart * 2 + 1 == kLL128LineElems - 1, "the flag word ends the flag part");
CCLAB_HD inline int ll128_part_payload(int part) { return part == kLL128FlagPart ? 8 : kLL128PartBytes; }
// The two words of part `part` carrying the first `n` (<= ll128_part_payload(part)) bytes of lo:hi (the
// part's payload as a lane holds it in registers), zero beyond; the flag part's second word is `flag`.
CCLAB_HD inline void ll128_part_words(uint64_t lo, uint64_t hi, size_t n, int part, uint64_t flag, uint64_t* olo,
                                      uint64_t* ohi) {
  *olo = le_low_bytes(lo, n);
  *ohi = part == kLL128FlagPart ? flag : (n > 8 ? le_low_bytes(hi, n - 8) : 0);
}

CCLAB_HD inline size_t ll128_pack(const void* src, size_t bytes, LL128Line* dst, uint64_t flag) {
  const unsigned char* s = static_cast<const unsigned char*>(src);
  const size_t n = ll128_lines(bytes);
  for (size_t i = 0; i < n; ++i) {
    const size_t o = i * kLL128LinePayload;
    ll128_make_words(s + o, bytes - o < kLL128LinePayload ? bytes - o : kLL128LinePayload, dst[i].v);
    dst[i].v[kLL128LineElems - 1] = flag;
  }
  return n;
}
CCLAB_HD inline bool ll128_unpack(const LL128Line* src, size_t bytes, void* dst, uint64_t flag) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const size_t n = ll128_lines(bytes);
  for (size_t i = 0; i < n; ++i) {
    if (!ll128_line_has_flag(src[i], flag)) return false;
    const size_t o = i * kLL128LinePayload;
    ll128_words_payload(src[i].v, d + o, bytes - o < kLL128LinePayload ? bytes - o : kLL128LinePayload);
  }
  return true;
}

// ---- the protocol types ------------------------------------------------------------------------------
//
// Beside ProtoSimple's members (protocols.h) a line protocol provides, for Primitives over lines:
//   Line, kLineBytes, kLinePayload, lines_per_step(step_bytes)
//   store_line(exec, Line*, bytes, n, step)          writes one line of step `step` (ordering above)
//   load_line(exec, const Line*, bytes, n, step)     true and the payload if the line carries the flag
//   needs_clean(step), clean_line(exec, Line*, step) NCCL's LL flag cleaning (never for LL128)
//   kGroupParts                                      lines move as kLL128Parts parts, one per lane of an
//                                                    8-lane group, on an executor with line groups
//                                                    (LL128: store_part_words / load_part_words below)
// Exec must offer 8-byte atomic loads/stores: load_u64, load_u64_acquire, store_u64, store_u64_release.

// NCCL's ProtoLL: one step per slice and chunk; a step carries half its buffer bytes of payload.
struct ProtoLL {
  static constexpr int kSlicePerChunk = 1;
  static constexpr int kStepPerSlice = 1;
  static constexpr int kChunkSteps = 1;
  static constexpr int kGrainBytes = 16;  // NCCL's LL grain
  static constexpr int kWireNum = 2, kWireDen = 1;
  static constexpr const char* kName = "LL";
  static constexpr int kDefaultBuffBytes = kLLBuffSize;
  using Line = LLLine;
  static constexpr int kLineBytes = kLLLineBytes;
  static constexpr int kLinePayload = kLLLinePayload;

  CCLAB_HD static int step_bytes(int buff_bytes) { return buff_bytes / kNcclSteps; }
  CCLAB_HD static int lines_per_step(int step_bytes) { return step_bytes / kLineBytes; }
  // Payload one step (= one chunk) carries: 32 KiB of the default 64 KiB step.
  CCLAB_HD static size_t max_chunk_bytes(int buff_bytes) {
    return static_cast<size_t>(lines_per_step(step_bytes(buff_bytes))) * kLinePayload;
  }

  // On a GPU a line moves as NCCL moves it, in one 16-byte volatile store or load (st/ld.volatile.v2.u64);
  // the host executors use two 8-byte atomics. Either way each half carries its own flag, and 8-byte
  // atomicity of a half is all the protocol relies on.
  template <typename Exec>
  CCLAB_HD static void store_line(Exec& exec, Line* l, const unsigned char* p, size_t n, uint64_t step) {
    store_word(exec, l, load_le_bytes(p, n), n, step);
  }
  template <typename Exec>
  CCLAB_HD static bool load_line(Exec& exec, const Line* l, unsigned char* p, size_t n, uint64_t step) {
    uint64_t w;
    if (!load_word(exec, l, step, &w)) return false;
    store_le_bytes(w, p, n);
    return true;
  }
  // The same with the line's 8 payload bytes as one little-endian word (data1 low, data2 high), for
  // a caller that keeps them in registers; store_word keeps the first `n` bytes of w, zero beyond.
  template <typename Exec>
  CCLAB_HD static void store_word(Exec& exec, Line* l, uint64_t w, size_t n, uint64_t step) {
    const Line x = ll_word_line(le_low_bytes(w, n), ll_flag(step));
    store16(exec, l, x.v[0], x.v[1]);
  }
  template <typename Exec>
  CCLAB_HD static bool load_word(Exec& exec, const Line* l, uint64_t step, uint64_t* w) {
    const uint32_t flag = ll_flag(step);
    uint64_t lo, hi;
#if CCLAB_DEVICE_PASS
    (void)exec;
    asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(l) : "memory");
    if (!ll_half_has_flag(lo, flag) || !ll_half_has_flag(hi, flag)) return false;
#else
    lo = exec.load_u64(&l->v[0]);
    if (!ll_half_has_flag(lo, flag)) return false;
    hi = exec.load_u64(&l->v[1]);
    if (!ll_half_has_flag(hi, flag)) return false;
#endif
    *w = ll_halves_word(lo, hi);
    return true;
  }
  template <typename Exec>
  CCLAB_HD static void store16(Exec& exec, Line* l, uint64_t lo, uint64_t hi) {
#if CCLAB_DEVICE_PASS
    (void)exec;
    asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(l), "l"(lo), "l"(hi) : "memory");
#else
    exec.store_u64(&l->v[0], lo);  // each half in one 8-byte store: its flag implies its data
    exec.store_u64(&l->v[1], hi);
#endif
  }
  CCLAB_HD static bool needs_clean(uint64_t step) { return ll_needs_clean(step); }
  static constexpr bool kGroupParts = false;
  template <typename Exec>
  CCLAB_HD static void clean_line(Exec& exec, Line* l, uint64_t step) {
    const uint64_t half = ll_half(0, ll_flag(step));
    store16(exec, l, half, half);
  }
};

// NCCL's ProtoLL128: one step per slice and chunk; a step carries 15/16 of its bytes as payload.
struct ProtoLL128 {
  static constexpr int kSlicePerChunk = 1;
  static constexpr int kStepPerSlice = 1;
  static constexpr int kChunkSteps = 1;
  static constexpr int kGrainBytes = 1920;  // NCCL's LL128 grain: 16 lines of 120 bytes
  static constexpr int kWireNum = 16, kWireDen = 15;
  static constexpr const char* kName = "LL128";
  static constexpr int kDefaultBuffBytes = kLL128BuffSize;
  using Line = LL128Line;
  static constexpr int kLineBytes = kLL128LineBytes;
  static constexpr int kLinePayload = kLL128LinePayload;

  CCLAB_HD static int step_bytes(int buff_bytes) { return buff_bytes / kNcclSteps; }
  CCLAB_HD static int lines_per_step(int step_bytes) { return step_bytes / kLineBytes; }
  // 576,000 bytes of the default 614,400-byte step.
  CCLAB_HD static size_t max_chunk_bytes(int buff_bytes) {
    return static_cast<size_t>(lines_per_step(step_bytes(buff_bytes))) * kLinePayload;
  }

  template <typename Exec>
  CCLAB_HD static void store_line(Exec& exec, Line* l, const unsigned char* p, size_t n, uint64_t step) {
    uint64_t w[kLL128DataElems];
    ll128_make_words(p, n, w);
    for (int i = 0; i < kLL128DataElems; ++i) exec.store_u64(&l->v[i], w[i]);
    exec.store_u64_release(&l->v[kLL128LineElems - 1], ll128_flag(step));  // data before flag
  }
  template <typename Exec>
  CCLAB_HD static bool load_line(Exec& exec, const Line* l, unsigned char* p, size_t n, uint64_t step) {
    if (exec.load_u64_acquire(&l->v[kLL128LineElems - 1]) != ll128_flag(step)) return false;
    uint64_t w[kLL128DataElems];
    for (int i = 0; i < kLL128DataElems; ++i) w[i] = exec.load_u64(&l->v[i]);  // after the flag
    ll128_words_payload(w, p, n);
    return true;
  }
  CCLAB_HD static bool needs_clean(uint64_t) { return false; }
  template <typename Exec>
  CCLAB_HD static void clean_line(Exec&, Line*, uint64_t) {}

  // NCCL's line groups (see the ordering notes at the top): lane `part` of an 8-lane group moves part
  // `part` of the line as two words held by value (lo = payload bytes [16p, 16p + 8), hi = the next 8,
  // or the flag for the flag part). Every lane of the group calls these for the same line, empty parts
  // included (they carry the zero padding and the flag).
  // Exec: store_line_part / load_line_part (one 16-byte access), group_wait (the group's vote).
  static constexpr bool kGroupParts = true;
  // Stores the first `n` (<= ll128_part_payload(part)) payload bytes of lo:hi, zero-padded, as part
  // `part` of step `step`'s line.
  template <typename Exec>
  CCLAB_HD static void store_part_words(Exec& exec, Line* l, int part, uint64_t lo, uint64_t hi, size_t n,
                                        uint64_t step) {
    uint64_t w0, w1;
    ll128_part_words(lo, hi, n, part, ll128_flag(step), &w0, &w1);
    exec.store_line_part(&l->v[2 * part], w0, w1, part == kLL128FlagPart);
  }
  // Polls until the group's flag lane sees step's flag, then loads the part again: a lane's poll may
  // have read its part before the line arrived. lo:hi are the part's two words (the flag part's hi is
  // the flag, not payload). False if the executor gave up (aborted).
  template <typename Exec, typename Site>
  CCLAB_HD static bool load_part_words(Exec& exec, const Line* l, int part, uint64_t step, const Site& site,
                                       uint64_t* lo, uint64_t* hi) {
    const uint64_t* w = &l->v[2 * part];
    const bool flag_part = part == kLL128FlagPart;
    const uint64_t flag = ll128_flag(step);
    uint64_t a = 0, b = 0;
    if (!exec.group_wait(
            [&]() {
              exec.load_line_part(w, &a, &b, flag_part);
              return flag_part && b != flag;
            },
            site))
      return false;
    exec.load_line_part(w, lo, hi, flag_part);
    return true;
  }
};

}  // namespace cclab

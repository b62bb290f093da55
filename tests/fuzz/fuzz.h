// tests/fuzz/fuzz.h - shared by the fuzz targets (tests/fuzz/fuzz_*.cc).
//
// Each target defines LLVMFuzzerTestOneInput. Built with -DCCLAB_FUZZ=ON (clang), it links libFuzzer
// and searches for inputs that crash, hang or break a property; built normally, it links replay_main.cc
// and runs the checked-in corpus (tests/fuzz/corpus/<target>/) as a ctest entry, so every input that
// once found a bug stays a regression test. Sanitizer builds (scripts/fuzz.sh) catch memory errors and
// undefined behaviour; FUZZ_CHECK catches wrong answers: a property that must hold for every input
// (a file the reader accepts is written back and read again to the same bytes, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

// Aborts with the property that failed (libFuzzer then saves the input as a crash).
#define FUZZ_CHECK(cond, what)                                                                  \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "%s:%d: property failed: %s\n  (%s)\n", __FILE__, __LINE__, #cond, \
                   std::string(what).c_str());                                                  \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)

namespace cclab {
namespace fuzz {

// Reads the input front to back: fixed-width integers, then the rest. Past the end, zeros.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  size_t left() const { return n_ - pos_; }
  uint8_t u8() { return pos_ < n_ ? p_[pos_++] : 0; }
  // Little-endian; each byte read in its own statement (the operands of | are unsequenced).
  uint32_t u16() {
    const uint32_t lo = u8();
    const uint32_t hi = u8();
    return lo | hi << 8;
  }
  uint32_t u32() {
    const uint32_t lo = u16();
    const uint32_t hi = u16();
    return lo | hi << 16;
  }
  std::string bytes(size_t k) {
    if (k > left()) k = left();
    std::string s(reinterpret_cast<const char*>(p_ + pos_), k);
    pos_ += k;
    return s;
  }
  std::string rest() { return bytes(left()); }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

}  // namespace fuzz
}  // namespace cclab

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

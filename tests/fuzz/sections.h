// tests/fuzz/sections.h - the input form of fuzz_trace_sections: a trace's sections without the file's
// framing (no CRC, no zstd), so that mutations reach the section decoders instead of the checksum.
//   repeated: u8 kind selector (kSectionKinds[k % 8]), u32 little-endian length, that many raw bytes
// trace_to_sections.cc turns real trace files into this form (the target's seed corpus).
#pragma once

#include <cstdint>
#include <string>

#include "trace/trace.h"

namespace cclab {
namespace fuzz {

constexpr uint32_t kUnknownSection = 0x4b4e554a;  // "JUNK": a kind this reader does not know (skipped)
constexpr uint32_t kSectionKinds[8] = {
    static_cast<uint32_t>(trace::SectionKind::kMeta),   static_cast<uint32_t>(trace::SectionKind::kTopo),
    static_cast<uint32_t>(trace::SectionKind::kChannels), static_cast<uint32_t>(trace::SectionKind::kOps),
    static_cast<uint32_t>(trace::SectionKind::kEvents), static_cast<uint32_t>(trace::SectionKind::kLoad),
    static_cast<uint32_t>(trace::SectionKind::kEnd),    kUnknownSection};

inline int section_selector(uint32_t kind) {
  for (int i = 0; i < 8; ++i)
    if (kSectionKinds[i] == kind) return i;
  return 7;
}

}  // namespace fuzz
}  // namespace cclab

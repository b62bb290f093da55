// tests/fuzz/trace_to_sections.cc - writes a trace file's sections in fuzz_trace_sections' input form
// (sections.h): the seeds of that target's corpus. Usage: fuzz_trace_to_sections IN.cctrace OUT
// The link load is recomputed with at most 16 bins (the written one has up to 1000 per link, 95% of a
// small trace's bytes), so that seeds stay small and mutations land on every section.
#include <cstdio>
#include <fstream>
#include <string>

#include "sections.h"
#include "trace/codec.h"

int main(int argc, char** argv) {
  using namespace cclab::trace;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN.cctrace OUT\n", argv[0]);
    return 2;
  }
  Trace t;
  std::string err;
  if (!read_trace(argv[1], &t, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  if (t.load.bins > 16) compute_link_load(&t, 16);
  const std::string bytes = encode_trace(t);
  std::string out;
  size_t pos = codec::kFileHeaderBytes;
  for (uint64_t index = 0; pos + codec::kSectionHeaderBytes <= bytes.size(); ++index) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data()) + pos;
    const codec::SectionHeader h = codec::get_section_header(p);
    std::string raw;
    if (!codec::check_section_header(h, index, &err) || h.stored > bytes.size() - pos - codec::kSectionHeaderBytes ||
        !codec::unpack_section(h, p + codec::kSectionHeaderBytes, index, &raw, &err)) {
      std::fprintf(stderr, "%s: %s\n", argv[1], err.c_str());
      return 1;
    }
    out.push_back(static_cast<char>(cclab::fuzz::section_selector(h.kind)));
    const uint32_t n = static_cast<uint32_t>(raw.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out += raw;
    pos += codec::kSectionHeaderBytes + h.stored;
  }
  std::ofstream o(argv[2], std::ios::binary);
  o << out;
  return o ? 0 : 1;
}

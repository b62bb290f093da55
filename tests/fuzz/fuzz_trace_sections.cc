// tests/fuzz/fuzz_trace_sections.cc - the trace reader's section decoders and their validation
// (codec::apply_section: META/TOPO/CHAN/OPS JSON, EVTS columns, LOAD, END), behind the CRC and zstd
// that fuzz_trace_file's mutations rarely get past. Input: sections.h's form.
//
// Properties: sections apply in order until one is refused (with a reason) - the whole-file reader and
// the stream decoder do exactly this -; what was applied passes through every consumer
// (trace_consumers.h) without a crash, complete or not; and a sequence accepted to its END section
// is a trace the writer writes back and reads again to the same bytes.
#include <string>

#include "fuzz.h"
#include "sections.h"
#include "trace/codec.h"
#include "trace_consumers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cclab;
  fuzz::Reader in(data, size);
  trace::Trace t;
  trace::codec::ReadState st;
  bool ok = true;
  while (in.left() > 0 && ok) {
    const uint32_t kind = fuzz::kSectionKinds[in.u8() % 8];
    const std::string raw = in.bytes(in.u32());
    std::string err;
    ok = trace::codec::apply_section(&t, &st, kind, raw, &err);
    FUZZ_CHECK(ok || !err.empty(), "a section was refused without a reason");
  }
  if (ok && st.complete) fuzz::check_rewrites(t);
  fuzz::consume_trace(t);
  return 0;
}

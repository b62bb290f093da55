// tests/fuzz/fuzz_trace_file.cc - a trace file from arbitrary bytes (docs/trace-format.md).
//
// Properties, for every input:
//  - decode_trace never crashes, and says why when it refuses;
//  - the stream decoder (the live viewer's), fed the same bytes in pieces whose sizes come from the
//    input, agrees: it completes without an error exactly when decode_trace accepts, and then holds
//    the same events;
//  - a file decode_trace accepts is one its writer can write back (encode_trace gives bytes, not ""),
//    and writing is a fixed point: decode(encode(t)) succeeds and encodes to the same bytes;
//  - what was accepted, whole or the sections before a failure (what a viewer shows of a stream),
//    passes through every consumer (trace_consumers.h) without a crash.
// Most mutations break a CRC; fuzz_trace_sections reaches the decoders behind it.
#include <string>

#include "fuzz.h"
#include "trace_consumers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cclab;
  const std::string bytes(reinterpret_cast<const char*>(data), size);

  trace::Trace t;
  std::string err;
  const bool ok = trace::decode_trace(bytes, &t, &err);
  FUZZ_CHECK(ok || !err.empty(), "decode_trace refused without saying why");

  // The stream decoder, in pieces of 1..256 bytes chosen from the input's own bytes.
  trace::TraceStreamDecoder dec;
  size_t pos = 0;
  bool fed = true;
  while (pos < size && fed) {
    const size_t k = std::min<size_t>(size - pos, 1 + data[(pos * 7919) % size]);
    fed = dec.feed(data + pos, k);
    pos += k;
  }
  // (Bytes after END: the stream decoder has read END, so complete(), and fails on them, as the file
  // reader refuses the file.)
  const bool stream_ok = dec.complete() && dec.error().empty();
  FUZZ_CHECK(stream_ok == ok, "stream decoder " + std::string(stream_ok ? "accepted" : "refused") +
                                  " where decode_trace " + (ok ? "accepted" : "refused: " + err) +
                                  (dec.error().empty() ? "" : "; stream: " + dec.error()));
  if (ok) FUZZ_CHECK(dec.trace().events.size() == t.events.size(), "stream and file decoders differ in events");

  if (ok) fuzz::check_rewrites(t);
  fuzz::consume_trace(t);
  if (!ok && dec.header_seen()) fuzz::consume_trace(dec.trace());
  return 0;
}

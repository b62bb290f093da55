// runtime/cli/trace_cmd.h - `cclab trace`: read a trace file (docs/trace-format.md), summarise it, list
// its steps, convert it for Perfetto / chrome://tracing, join per-process parts (docs/cli-trace.md).
//
//   cclab trace info run.cctrace                      format, run, topology, channels, collectives, links
//   cclab trace dump run.cctrace --rank 0 --channel 1 --limit 50      the step log (--csv: as CSV)
//   cclab trace export --chrome run.json run.cctrace [--from US --to US] [--no-flows] [--no-counters]
//   cclab trace merge -o run.cctrace run.cctrace.0 run.cctrace.4       one trace from per-process parts
//
// Exit status: 0 ok, 1 an output file could not be written, 2 bad usage (unknown subcommand or flag,
// bad value), 3 a trace could not be read (missing, not a trace, truncated, corrupt) or merged.
// Every failure prints one line on stderr, "cclab trace SUB: what was wrong".
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace cclab {

constexpr int kTraceExitOk = 0;
constexpr int kTraceExitIo = 1;
constexpr int kTraceExitUsage = 2;
constexpr int kTraceExitBadTrace = 3;

// What `cclab trace info` knows about the file besides its contents.
struct TraceFileFacts {
  std::string path;
  uint64_t size = 0;      // bytes
  uint32_t version = 0;   // the header's format version (0: unknown)
};

struct TraceInfoOptions {
  int max_ops = 20;    // --ops N: rows of the collectives table (0: all)
  int max_links = 10;  // --links N: busiest links listed (0: none)
};

// The whole report of `cclab trace info` (pure).
std::string format_trace_info(const trace::Trace& t, const TraceFileFacts& file, const TraceInfoOptions& opt);

// The version in a trace file's 16-byte header (0 when the file is shorter or not a trace).
uint32_t trace_file_version(const std::string& path);

struct TraceDumpOptions {
  int rank = -1;          // --rank R (-1: every rank)
  int channel = -1;       // --channel C
  int64_t op = -1;        // --op N (the collective's op_count)
  uint64_t limit = 0;     // --limit N (0: all)
  bool csv = false;       // --csv
};

// `cclab trace dump`: one line per step (after a header), to `out`. Returns the number of steps listed.
uint64_t write_trace_dump(const trace::Trace& t, const TraceDumpOptions& opt, std::FILE* out);

// The help text of `cclab trace --help`.
std::string trace_usage();

// Runs `cclab trace` with the arguments after "trace", printing to `out` / `err`.
int trace_main(const std::vector<std::string>& args, std::FILE* out, std::FILE* err);
// The same on stdout / stderr.
int trace_main(const std::vector<std::string>& args);

}  // namespace cclab

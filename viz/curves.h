// viz/curves.h - busbw-vs-size results to overlay (`cclab viz --curves FILE`), read from what the tools
// write:
//   cclab sim --csv     header "bytes,count,type,op,root,time_us,algbw,busbw,..." (a first "variant"
//                       column with --compare: one curve per variant); any CSV with bytes (or size) and
//                       busbw columns is accepted
//   cclab sim --json    {..., "collective", "topo", "rows": [{"bytes", "time_us", "algbw", "busbw", ...}]}
//                       or with --compare {"compare": true, "a": {...}, "b": {...}} (two curves)
//   cclab perf / cclab sim stdout (nccl-tests' table): "#" comment lines and rows
//                       "size count type redop root time algbw busbw #wrong [time algbw busbw #wrong]..."
//                       (the out-of-place busbw; the in-place one where out-of-place is N/A)
// Pure logic.
#pragma once

#include <string>
#include <vector>

namespace cclab {
namespace viz {

struct CurvePoint {
  double bytes = 0;
  double time_us = 0;
  double algbw = 0;  // GB/s
  double busbw = 0;  // GB/s
};

struct Curve {
  std::string label;   // file name, plus the variant / collective and topology when known
  std::string source;  // the file
  std::vector<CurvePoint> points;  // in file order
};

// Parses `text` (the contents of `name`); appends one or more curves. False with *error naming the
// file, the line or row, and what was wrong.
bool parse_curves(const std::string& text, const std::string& name, std::vector<Curve>* out, std::string* error);
// Reads and parses a file.
bool load_curves(const std::string& path, std::vector<Curve>* out, std::string* error);

}  // namespace viz
}  // namespace cclab

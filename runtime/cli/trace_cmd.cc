// runtime/cli/trace_cmd.cc - `cclab trace` (see trace_cmd.h): info, dump, export --chrome, merge.
#include "trace_cmd.h"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>
#include <stdexcept>
#include <streambuf>

#include "trace/chrome.h"
#include "trace/merge.h"

namespace cclab {

namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof(buf)) return std::string(buf, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(&out[0], out.size(), fmt, ap);
  va_end(ap);
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? format("%.0f B", b) : format("%.2f %s", b, units[u]);
}

const char* safe(const char* s, const char* fallback) { return s != nullptr ? s : fallback; }

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

// "0 1 2 3" (the first `max` entries, then "... (N ranks)").
std::string join_ranks(const std::vector<int>& v, size_t max) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out += (i ? " " : "") + std::to_string(v[i]);
  if (v.size() > max) out += format(" ... (%zu ranks)", v.size());
  return out;
}

// Counts per kind, "8 gpu, 4 nvswitch" in order of first appearance.
template <typename T, typename F>
std::string kind_counts(const std::vector<T>& items, F kind_of) {
  std::vector<std::pair<std::string, int>> counts;
  for (const T& item : items) {
    const std::string k = kind_of(item).empty() ? std::string("?") : kind_of(item);
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == k; });
    if (it == counts.end())
      counts.push_back({k, 1});
    else
      ++it->second;
  }
  std::string out;
  for (const auto& c : counts) out += (out.empty() ? "" : ", ") + std::to_string(c.second) + " " + c.first;
  return out.empty() ? "none" : out;
}

std::string node_name(const trace::Trace& t, int node) {
  return node >= 0 && node < static_cast<int>(t.nodes.size()) ? t.nodes[node].name : "node" + std::to_string(node);
}

// ---- values -----------------------------------------------------------------------------------------

// An integer flag value in [min, max]; throws std::invalid_argument naming the flag.
int64_t parse_int(const std::string& text, const std::string& flag, int64_t min, int64_t max) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end == nullptr || *end != '\0' || errno != 0 || v < min || v > max)
    throw std::invalid_argument(flag + " needs an integer from " + std::to_string(min) + " to " +
                                std::to_string(max) + ", not '" + text + "'");
  return v;
}

// A time in microseconds (may be negative); throws std::invalid_argument naming the flag.
double parse_time(const std::string& text, const std::string& flag) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || errno != 0 || !std::isfinite(v))
    throw std::invalid_argument(flag + " needs a time in microseconds, not '" + text + "'");
  return v;
}

// A std::streambuf over a FILE* (export to stdout or to the caller's stream).
class FileStreamBuf : public std::streambuf {
 public:
  explicit FileStreamBuf(std::FILE* f) : f_(f) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    return std::fputc(c, f_) == EOF ? traits_type::eof() : c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    return static_cast<std::streamsize>(std::fwrite(s, 1, static_cast<size_t>(n), f_));
  }
  int sync() override { return std::fflush(f_) == 0 ? 0 : -1; }

 private:
  std::FILE* f_;
};

// ---- subcommands ------------------------------------------------------------------------------------

struct Io {
  std::FILE* out;
  std::FILE* err;
  int fail(int status, const std::string& sub, const std::string& message) const {
    std::fprintf(err, "cclab trace%s%s: %s\n", sub.empty() ? "" : " ", sub.c_str(), message.c_str());
    return status;
  }
};

// Parses `args` with `app` (CLI11, extras allowed); false with *message on an error or a leftover
// argument. *help when -h/--help was given.
bool parse_args(CLI::App& app, const std::vector<std::string>& args, const std::string& sub, std::string* message) {
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    *message = e.what();
    return false;
  }
  const std::vector<std::string> extras = app.remaining();
  if (!extras.empty()) {
    const std::string& first = extras.front();
    *message = first.size() > 1 && first[0] == '-'
                   ? "unknown flag '" + first + "' (see cclab trace " + sub + " --help)"
                   : "unexpected argument '" + first + "' (see cclab trace " + sub + " --help)";
    return false;
  }
  return true;
}

// Reads a trace; false (after printing the reader's error) when it cannot.
bool load(const Io& io, const std::string& sub, const std::string& path, trace::Trace* t) {
  std::string error;
  if (trace::read_trace(path, t, &error)) return true;
  if (error.empty()) error = "cannot read the trace";
  if (error.find(path) == std::string::npos) error = path + ": " + error;
  io.fail(kTraceExitBadTrace, sub, error);
  return false;
}

int info_main(const std::vector<std::string>& args, const Io& io) {
  CLI::App app{"cclab trace info", "cclab trace info"};
  app.set_help_flag();
  app.allow_extras();
  bool help = false;
  std::string path, ops, links;
  app.add_flag("-h,--help", help);
  app.add_option("--ops", ops);
  app.add_option("--links", links);
  app.add_option("trace", path);
  std::string message;
  if (!parse_args(app, args, "info", &message)) return io.fail(kTraceExitUsage, "info", message);
  if (help) {
    std::fputs(trace_usage().c_str(), io.out);
    return kTraceExitOk;
  }
  TraceInfoOptions opt;
  try {
    if (!ops.empty()) opt.max_ops = static_cast<int>(parse_int(ops, "--ops", 0, 1 << 30));
    if (!links.empty()) opt.max_links = static_cast<int>(parse_int(links, "--links", 0, 1 << 30));
  } catch (const std::invalid_argument& e) {
    return io.fail(kTraceExitUsage, "info", e.what());
  }
  if (path.empty()) return io.fail(kTraceExitUsage, "info", "give the trace file (cclab trace info TRACE)");
  trace::Trace t;
  if (!load(io, "info", path, &t)) return kTraceExitBadTrace;
  TraceFileFacts facts;
  facts.path = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) facts.size = static_cast<uint64_t>(st.st_size);
  facts.version = trace_file_version(path);
  std::fputs(format_trace_info(t, facts, opt).c_str(), io.out);
  return kTraceExitOk;
}

int dump_main(const std::vector<std::string>& args, const Io& io) {
  CLI::App app{"cclab trace dump", "cclab trace dump"};
  app.set_help_flag();
  app.allow_extras();
  bool help = false, csv = false;
  std::string path, rank, channel, op, limit;
  app.add_flag("-h,--help", help);
  app.add_flag("--csv", csv);
  app.add_option("--rank", rank);
  app.add_option("--channel", channel);
  app.add_option("--op", op);
  app.add_option("--limit", limit);
  app.add_option("trace", path);
  std::string message;
  if (!parse_args(app, args, "dump", &message)) return io.fail(kTraceExitUsage, "dump", message);
  if (help) {
    std::fputs(trace_usage().c_str(), io.out);
    return kTraceExitOk;
  }
  TraceDumpOptions opt;
  opt.csv = csv;
  try {
    if (!rank.empty()) opt.rank = static_cast<int>(parse_int(rank, "--rank", 0, 1 << 30));
    if (!channel.empty()) opt.channel = static_cast<int>(parse_int(channel, "--channel", 0, 1 << 30));
    if (!op.empty()) opt.op = parse_int(op, "--op", 0, std::numeric_limits<int64_t>::max());
    if (!limit.empty()) opt.limit = static_cast<uint64_t>(parse_int(limit, "--limit", 0, std::numeric_limits<int64_t>::max()));
  } catch (const std::invalid_argument& e) {
    return io.fail(kTraceExitUsage, "dump", e.what());
  }
  if (path.empty()) return io.fail(kTraceExitUsage, "dump", "give the trace file (cclab trace dump TRACE)");
  trace::Trace t;
  if (!load(io, "dump", path, &t)) return kTraceExitBadTrace;
  write_trace_dump(t, opt, io.out);
  std::fflush(io.out);
  if (std::ferror(io.out)) return io.fail(kTraceExitIo, "dump", "writing the output failed");
  return kTraceExitOk;
}

int export_main(const std::vector<std::string>& args, const Io& io) {
  CLI::App app{"cclab trace export", "cclab trace export"};
  app.set_help_flag();
  app.allow_extras();
  bool help = false, no_flows = false, no_counters = false, no_steps = false;
  std::string path, chrome, from, to, links;
  app.add_flag("-h,--help", help);
  app.add_option("--chrome", chrome);
  app.add_option("--from", from);
  app.add_option("--to", to);
  app.add_option("--links", links);
  app.add_flag("--no-flows", no_flows);
  app.add_flag("--no-counters", no_counters);
  app.add_flag("--no-steps", no_steps);
  app.add_option("trace", path);
  std::string message;
  if (!parse_args(app, args, "export", &message)) return io.fail(kTraceExitUsage, "export", message);
  if (help) {
    std::fputs(trace_usage().c_str(), io.out);
    return kTraceExitOk;
  }
  trace::ChromeOptions opt;
  opt.flows = !no_flows;
  opt.counters = !no_counters;
  opt.steps = !no_steps;
  try {
    if (!from.empty()) opt.from_us = parse_time(from, "--from");
    if (!to.empty()) opt.to_us = parse_time(to, "--to");
    if (!links.empty()) opt.max_link_counters = static_cast<int>(parse_int(links, "--links", 1, 1 << 30));
  } catch (const std::invalid_argument& e) {
    return io.fail(kTraceExitUsage, "export", e.what());
  }
  if (chrome.empty())
    return io.fail(kTraceExitUsage, "export", "give --chrome OUT.json (Chrome's Trace Event Format, the only export)");
  if (path.empty())
    return io.fail(kTraceExitUsage, "export", "give the trace file (cclab trace export --chrome OUT.json TRACE)");
  if (opt.from_us > opt.to_us)
    return io.fail(kTraceExitUsage, "export", "--from " + from + " is after --to " + to + ": nothing to export");
  trace::Trace t;
  if (!load(io, "export", path, &t)) return kTraceExitBadTrace;

  std::string error;
  trace::ChromeStats stats;
  bool ok;
  if (chrome == "-") {
    FileStreamBuf buf(io.out);
    std::ostream os(&buf);
    ok = trace::export_chrome(t, os, opt, &error, &stats);
    if (!ok) return io.fail(kTraceExitIo, "export", "stdout: " + error);
    return kTraceExitOk;
  }
  std::ofstream file(chrome, std::ios::binary | std::ios::trunc);
  if (!file) return io.fail(kTraceExitIo, "export", "cannot write '" + chrome + "': " + std::strerror(errno));
  ok = trace::export_chrome(t, file, opt, &error, &stats);
  file.close();
  if (!ok || !file) {
    std::remove(chrome.c_str());
    return io.fail(kTraceExitIo, "export", chrome + ": " + (error.empty() ? "writing failed" : error));
  }
  std::fprintf(io.out,
               "# wrote %s: %llu events (%llu steps, %llu kernel and %llu collective slices, %llu flows, %llu counter "
               "samples on %llu links), %s\n",
               chrome.c_str(), static_cast<unsigned long long>(stats.events()),
               static_cast<unsigned long long>(stats.steps), static_cast<unsigned long long>(stats.kernels),
               static_cast<unsigned long long>(stats.collectives), static_cast<unsigned long long>(stats.flows),
               static_cast<unsigned long long>(stats.counter_samples),
               static_cast<unsigned long long>(stats.counter_tracks), human_bytes(static_cast<double>(stats.bytes)).c_str());
  if (stats.unmatched_sends > 0)
    std::fprintf(io.out, "# %llu sending steps have no receiving step in the export (no flow arrow)\n",
                 static_cast<unsigned long long>(stats.unmatched_sends));
  std::fprintf(io.out, "# open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing (Load)\n");
  return kTraceExitOk;
}

int merge_main(const std::vector<std::string>& args, const Io& io) {
  CLI::App app{"cclab trace merge", "cclab trace merge"};
  app.set_help_flag();
  app.allow_extras();
  bool help = false;
  std::string out_path;
  std::vector<std::string> parts;
  app.add_flag("-h,--help", help);
  app.add_option("-o,--output", out_path);
  app.add_option("parts", parts);
  std::string message;
  if (!parse_args(app, args, "merge", &message)) return io.fail(kTraceExitUsage, "merge", message);
  if (help) {
    std::fputs(trace_usage().c_str(), io.out);
    return kTraceExitOk;
  }
  if (out_path.empty()) return io.fail(kTraceExitUsage, "merge", "give -o OUT (cclab trace merge -o OUT PART...)");
  if (parts.empty()) return io.fail(kTraceExitUsage, "merge", "give the parts to merge (cclab trace merge -o OUT PART...)");
  std::vector<trace::Trace> traces(parts.size());
  for (size_t i = 0; i < parts.size(); ++i)
    if (!load(io, "merge", parts[i], &traces[i])) return kTraceExitBadTrace;
  trace::Trace merged;
  std::string error;
  if (!trace::merge_traces(traces, &merged, &error)) return io.fail(kTraceExitBadTrace, "merge", error);
  if (!trace::write_trace(out_path, merged, &error)) return io.fail(kTraceExitIo, "merge", error);
  std::fprintf(io.out, "# merged %zu parts into %s: %zu ranks' events (%zu), %zu collectives\n", parts.size(),
               out_path.c_str(), static_cast<size_t>(merged.meta.nranks), merged.events.size(), merged.ops.size());
  return kTraceExitOk;
}

}  // namespace

// ---- info -------------------------------------------------------------------------------------------

uint32_t trace_file_version(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  unsigned char h[16];
  const size_t got = std::fread(h, 1, sizeof(h), f);
  std::fclose(f);
  if (got != sizeof(h) || std::memcmp(h, trace::kMagic, sizeof(trace::kMagic)) != 0) return 0;
  return static_cast<uint32_t>(h[8]) | static_cast<uint32_t>(h[9]) << 8 | static_cast<uint32_t>(h[10]) << 16 |
         static_cast<uint32_t>(h[11]) << 24;
}

std::string format_trace_info(const trace::Trace& t, const TraceFileFacts& file, const TraceInfoOptions& opt) {
  std::string s;
  const trace::Meta& m = t.meta;
  const size_t nev = t.events.size();
  double first = 0, last = 0;
  for (size_t i = 0; i < nev; ++i) {
    const trace::Event& e = t.events[i];
    first = i == 0 ? e.begin_us : std::min(first, e.begin_us);
    last = i == 0 ? e.end_us : std::max(last, e.end_us);
  }
  s += format("trace       %s\n", file.path.c_str());
  std::string fmt_line = file.version > 0 ? format("cclab trace v%u", file.version) : std::string("cclab trace");
  if (file.size > 0) {
    fmt_line += ", " + human_bytes(static_cast<double>(file.size));
    if (nev > 0) fmt_line += format(" (%.1f bytes/event)", static_cast<double>(file.size) / static_cast<double>(nev));
  }
  s += "format      " + fmt_line + "\n";
  s += "tool        " + or_dash(m.tool) + "\n";
  if (!m.command.empty()) s += "command     " + m.command + "\n";
  if (!m.created.empty()) s += "created     " + m.created + "\n";
  s += "backend     " + or_dash(m.backend) + " (clock: " + or_dash(m.clock) + ")\n";
  s += "topology    " + or_dash(m.topo_name);
  if (!m.topo_description.empty()) s += ": " + m.topo_description;
  s += "\n";
  s += format("ranks       %d on %d machine%s\n", m.nranks, m.machines, m.machines == 1 ? "" : "s");
  s += format("nodes       %zu: ", t.nodes.size()) + kind_counts(t.nodes, [](const trace::Node& n) { return n.kind; }) +
       "\n";
  s += format("links       %zu (one direction each): ", t.links.size()) +
       kind_counts(t.links, [](const trace::Link& l) { return l.kind; }) + format("; %zu routes\n", t.routes.size());

  // Channels.
  s += format("channels    %zu\n", t.channels.size());
  // One line per run of consecutive channels with the same ring and tree.
  std::vector<std::string> what(t.channels.size());
  for (size_t c = 0; c < t.channels.size(); ++c) {
    const trace::Channel& ch = t.channels[c];
    what[c] = "ring " + join_ranks(ch.ring, 16);
    if (!ch.tree_up.empty()) {
      std::vector<int> roots;
      for (size_t r = 0; r < ch.tree_up.size(); ++r)
        if (ch.tree_up[r] < 0) roots.push_back(static_cast<int>(r));
      what[c] += format("   tree %d, root %s", ch.tree_index, join_ranks(roots, 4).c_str());
    }
  }
  const size_t max_lines = 16;
  size_t lines = 0, c = 0;
  for (; c < t.channels.size() && lines < max_lines; ++lines) {
    size_t e = c + 1;
    while (e < t.channels.size() && what[e] == what[c] && t.channels[e].index == t.channels[e - 1].index + 1) ++e;
    const std::string label = e - c == 1 ? format("channel %d", t.channels[c].index)
                                         : format("channels %d-%d", t.channels[c].index, t.channels[e - 1].index);
    s += format("  %-15s %s\n", label.c_str(), what[c].c_str());
    c = e;
  }
  if (c < t.channels.size()) s += format("  ... %zu more channels\n", t.channels.size() - c);

  // Events.
  s += format("events      %zu steps", nev);
  if (nev > 0) s += format(", %.3f .. %.3f us (%.3f us)", first, last, last - first);
  s += "\n";

  // The doctor's reports (STUK).
  if (!t.stuck.empty()) {
    const trace::Stuck& last = t.stuck.back();
    s += format("doctor      %zu report%s of stuck waits (cclab doctor %s prints them); the last at %.3f us: %s%s\n",
                t.stuck.size(), t.stuck.size() == 1 ? "" : "s", file.path.c_str(), last.time_us, last.summary.c_str(),
                last.certain ? " (certain: the operation failed)" : "");
  }

  // Collectives.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> per_op;  // op_count -> (steps, bytes sent)
  for (const trace::Event& e : t.events) {
    auto& p = per_op[e.op_count];
    ++p.first;
    if (e.send_peer >= 0) p.second += e.bytes;
  }
  s += format("\n# collectives: %zu\n", t.ops.size());
  if (!t.ops.empty()) {
    s += format("# %6s  %-13s %-5s %-6s %-8s %-5s %12s %4s %12s %9s %9s %9s %12s\n", "op", "collective", "algo", "proto",
                "type", "redop", "bytes", "nch", "time_us", "algbw", "busbw", "steps", "sent");
    s += format("# %6s  %-13s %-5s %-6s %-8s %-5s %12s %4s %12s %9s %9s %9s %12s\n", "", "", "", "", "", "", "", "",
                "", "GB/s", "GB/s", "", "bytes");
    const size_t shown = opt.max_ops > 0 ? std::min(t.ops.size(), static_cast<size_t>(opt.max_ops)) : t.ops.size();
    for (size_t i = 0; i < shown; ++i) {
      const trace::Op& o = t.ops[i];
      auto it = per_op.find(o.op_count);
      const uint64_t steps = it == per_op.end() ? 0 : it->second.first;
      const uint64_t sent = it == per_op.end() ? 0 : it->second.second;
      s += format("  %6llu  %-13s %-5s %-6s %-8s %-5s %12zu %4d %12.3f %9.2f %9.2f %9llu %12llu\n",
                  static_cast<unsigned long long>(o.op_count), safe(trace::coll_name(o.coll), "?"),
                  or_dash(o.algo).c_str(), or_dash(o.proto).c_str(), or_dash(o.type).c_str(), or_dash(o.redop).c_str(),
                  o.bytes, o.nchannels, o.end_us - o.begin_us, o.algbw, o.busbw, static_cast<unsigned long long>(steps),
                  static_cast<unsigned long long>(sent));
    }
    if (shown < t.ops.size()) s += format("  ... %zu more (--ops 0 lists all)\n", t.ops.size() - shown);
  }

  // Busiest links.
  const trace::LinkLoad& L = t.load;
  if (opt.max_links > 0) {
    if (L.series.empty() || L.bins <= 0 || L.bin_us <= 0) {
      s += "\n# busiest links: none (the trace has no link load)\n";
    } else {
      struct Row {
        int link;
        double peak, avg, gb, sum;
      };
      std::vector<Row> rows;
      for (const auto& ser : L.series) {
        double sum = 0, peak = 0;
        for (float g : ser.gbs) {
          const double v = std::isfinite(g) ? g : 0;
          sum += v;
          peak = std::max(peak, v);
        }
        rows.push_back({ser.link, peak, sum / L.bins, sum * L.bin_us * 1e3 / 1e9, sum});
      }
      // Busiest first: average (bytes), then peak, then link index (as export --links picks them).
      std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        if (a.sum != b.sum) return a.sum > b.sum;
        if (a.peak != b.peak) return a.peak > b.peak;
        return a.link < b.link;
      });
      const size_t shown = std::min(rows.size(), static_cast<size_t>(opt.max_links));
      s += format("\n# busiest links: %zu of %zu that carried traffic (LOAD: %d bins of %.3f us from %.3f us)\n", shown,
                  rows.size(), L.bins, L.bin_us, L.t0_us);
      s += format("# %5s  %-36s %-7s %9s %9s %9s %7s %10s\n", "link", "from -> to", "kind", "capacity", "peak", "avg",
                  "peak", "moved");
      s += format("# %5s  %-36s %-7s %9s %9s %9s %7s %10s\n", "", "", "", "GB/s", "GB/s", "GB/s", "%cap", "GB");
      for (size_t i = 0; i < shown; ++i) {
        const Row& r = rows[i];
        const bool known = r.link >= 0 && r.link < static_cast<int>(t.links.size());
        const trace::Link* l = known ? &t.links[r.link] : nullptr;
        const std::string name = l ? node_name(t, l->from) + " -> " + node_name(t, l->to) : "?";
        const std::string cap_pct = l && l->gbs > 0 ? format("%.1f", 100.0 * r.peak / l->gbs) : std::string("-");
        s += format("  %5d  %-36s %-7s %9.1f %9.2f %9.2f %7s %10.6f\n", r.link, name.c_str(),
                    l ? or_dash(l->kind).c_str() : "?", l ? l->gbs : 0.0, r.peak, r.avg, cap_pct.c_str(), r.gb);
      }
    }
  }
  return s;
}

// ---- dump -------------------------------------------------------------------------------------------

uint64_t write_trace_dump(const trace::Trace& t, const TraceDumpOptions& opt, std::FILE* out) {
  if (opt.csv)
    std::fputs("begin_us,dur_us,wait_us,rank,channel,op,collective,primitive,from,to,offset,bytes,step,proto\n", out);
  else
    std::fprintf(out, "# %12s %10s %10s %5s %4s %6s  %-18s %5s %5s %12s %10s %8s  %s\n", "begin_us", "dur_us",
                 "wait_us", "rank", "ch", "op", "primitive", "from", "to", "offset", "bytes", "step", "proto");
  uint64_t listed = 0, matched = 0;
  for (const trace::Event& e : t.events) {
    if ((opt.rank >= 0 && e.rank != opt.rank) || (opt.channel >= 0 && e.channel != opt.channel) ||
        (opt.op >= 0 && e.op_count != static_cast<uint64_t>(opt.op)))
      continue;
    ++matched;
    if (opt.limit > 0 && listed >= opt.limit) continue;
    ++listed;
    const std::string from = e.recv_peer >= 0 ? std::to_string(e.recv_peer) : "-";
    const std::string to = e.send_peer >= 0 ? std::to_string(e.send_peer) : "-";
    const double wait = std::min(std::max(e.data_us - e.begin_us, 0.0), std::max(e.end_us - e.begin_us, 0.0));
    const char* prim = safe(trace::prim_label(e.prim), "?");
    const char* proto = safe(trace::proto_label(e.proto), "?");
    if (opt.csv)
      std::fprintf(out, "%.3f,%.3f,%.3f,%d,%d,%llu,%s,%s,%s,%s,%llu,%llu,%llu,%s\n", e.begin_us, e.end_us - e.begin_us,
                   wait, e.rank, e.channel, static_cast<unsigned long long>(e.op_count),
                   safe(trace::coll_name(e.coll), "?"), prim, from.c_str(), to.c_str(),
                   static_cast<unsigned long long>(e.offset), static_cast<unsigned long long>(e.bytes),
                   static_cast<unsigned long long>(e.step), proto);
    else
      std::fprintf(out, "  %12.3f %10.3f %10.3f %5d %4d %6llu  %-18s %5s %5s %12llu %10llu %8llu  %s\n", e.begin_us,
                   e.end_us - e.begin_us, wait, e.rank, e.channel, static_cast<unsigned long long>(e.op_count), prim,
                   from.c_str(), to.c_str(), static_cast<unsigned long long>(e.offset),
                   static_cast<unsigned long long>(e.bytes), static_cast<unsigned long long>(e.step), proto);
  }
  if (!opt.csv) {
    std::fprintf(out, "# %llu of %zu steps listed", static_cast<unsigned long long>(listed), t.events.size());
    if (matched > listed)
      std::fprintf(out, " (%llu more match: raise --limit)", static_cast<unsigned long long>(matched - listed));
    std::fputs("\n", out);
  }
  return listed;
}

// ---- main -------------------------------------------------------------------------------------------

std::string trace_usage() {
  return "usage: cclab trace info TRACE [--ops N] [--links N]\n"
         "       cclab trace dump TRACE [--rank R] [--channel C] [--op N] [--limit N] [--csv]\n"
         "       cclab trace export --chrome OUT.json TRACE [--from US] [--to US] [--no-flows] [--no-counters]\n"
         "                          [--no-steps] [--links N]\n"
         "       cclab trace merge -o OUT PART [PART...]\n"
         "\n"
         "Reads a cclab trace (docs/trace-format.md: `cclab sim --trace FILE`, CCLAB_TRACE=FILE on a run).\n"
         "\n"
         "  info      the run (tool, backend, clock, topology, ranks), its channels (rings, trees), a table of\n"
         "            its collectives (bytes, channels, time, algbw/busbw), events, file size, busiest links\n"
         "      --ops N        collectives listed (default 20, 0: all)\n"
         "      --links N      busiest links listed, by average GB/s (default 10, 0: none)\n"
         "  dump      one line per primitive step: begin, duration, wait, rank, channel, op, primitive,\n"
         "            from -> to rank, offset, bytes, connection step, protocol\n"
         "      --rank R, --channel C, --op N   only those steps (N: the collective's op count)\n"
         "      --limit N      at most N lines (default: all)\n"
         "      --csv          comma-separated with a header line\n"
         "  export    Chrome's Trace Event Format JSON for https://ui.perfetto.dev or chrome://tracing:\n"
         "            a process per rank, a thread per channel plus one for the collectives, a slice per\n"
         "            step, flow arrows from each send to its receive, a GB/s counter per link\n"
         "      --chrome OUT   the JSON file to write ('-': stdout)\n"
         "      --from US, --to US   only what overlaps this window (trace microseconds)\n"
         "      --no-flows     no send -> receive arrows\n"
         "      --no-counters  no link counters\n"
         "      --no-steps     only the collective and per-channel kernel slices (much smaller)\n"
         "      --links N      counters for the N links that moved the most bytes only\n"
         "  merge     one trace from the per-process parts of a run (CCLAB_TRACE writes PATH.<first rank>\n"
         "            per process when a communicator spans processes)\n"
         "      -o, --output OUT   the merged trace\n"
         "\n"
         "Exit status: 0 ok, 1 an output could not be written, 2 bad usage, 3 a trace could not be read.\n";
}

int trace_main(const std::vector<std::string>& args, std::FILE* out, std::FILE* err) {
  const Io io{out, err};
  if (args.empty()) {
    std::fputs(trace_usage().c_str(), err);
    return kTraceExitUsage;
  }
  const std::string& sub = args[0];
  if (sub == "-h" || sub == "--help" || sub == "help") {
    std::fputs(trace_usage().c_str(), out);
    return kTraceExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (sub == "info") return info_main(rest, io);
    if (sub == "dump") return dump_main(rest, io);
    if (sub == "export") return export_main(rest, io);
    if (sub == "merge") return merge_main(rest, io);
  } catch (const std::bad_alloc&) {
    return io.fail(kTraceExitBadTrace, sub, "out of memory");
  } catch (const std::exception& e) {
    return io.fail(kTraceExitBadTrace, sub, e.what());
  }
  return io.fail(kTraceExitUsage, "",
                 (sub.size() > 1 && sub[0] == '-' ? "unknown flag '" : "unknown subcommand '") + sub +
                     "' (expected info, dump, export or merge; see cclab trace --help)");
}

int trace_main(const std::vector<std::string>& args) {
  const int status = trace_main(args, stdout, stderr);
  std::fflush(stdout);
  return status;
}

}  // namespace cclab

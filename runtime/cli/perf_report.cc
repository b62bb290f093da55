// runtime/cli/perf_report.cc - byte accounting, bandwidth and the nccl-tests text layout.
#include "perf_report.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "cclab/cclab.h"

namespace cclab {
namespace {

std::string printf_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return std::string(buf, n < 0 ? 0 : std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
}

// nccl-tests keeps per-rank chunks 16-byte aligned so vectorized kernels see aligned slices.
size_t per_rank_chunk(size_t count, size_t elt_size, int nranks) {
  const size_t per_rank = count / static_cast<size_t>(nranks);
  const size_t align = elt_size < 16 ? 16 / elt_size : 1;
  return per_rank & ~(align - 1);
}

}  // namespace

CollCounts coll_counts(PerfCollective coll, size_t bytes, size_t elt_size, int nranks) {
  CollCounts c;
  const size_t count = bytes / elt_size;
  const size_t n = static_cast<size_t>(nranks);
  switch (coll) {
    case PerfCollective::kAllReduce:
    case PerfCollective::kBroadcast:
    case PerfCollective::kReduce:
    case PerfCollective::kSendRecv: c.send_count = c.recv_count = c.param_count = count; break;
    case PerfCollective::kAllGather:
    case PerfCollective::kGather: {
      const size_t base = per_rank_chunk(count, elt_size, nranks);
      c.send_count = base;
      c.recv_count = base * n;
      c.param_count = base;
      c.send_inplace_offset = base;  // each rank's input sits in its own slot of the output
      break;
    }
    case PerfCollective::kReduceScatter:
    case PerfCollective::kScatter: {
      const size_t base = per_rank_chunk(count, elt_size, nranks);
      c.send_count = base * n;
      c.recv_count = base;
      c.param_count = base;
      c.recv_inplace_offset = base;  // each rank's output is its own slot of the input
      break;
    }
    case PerfCollective::kAllToAll: {
      const size_t base = per_rank_chunk(count, elt_size, nranks);
      c.send_count = c.recv_count = base * n;
      c.param_count = base;
      break;
    }
  }
  return c;
}

size_t reported_bytes(const CollCounts& counts, size_t elt_size) {
  return std::max(counts.send_count, counts.recv_count) * elt_size;
}

double busbw_factor(PerfCollective coll, int nranks) {
  const double n = nranks;
  switch (coll) {
    case PerfCollective::kAllReduce: return 2.0 * (n - 1) / n;
    case PerfCollective::kAllGather:
    case PerfCollective::kReduceScatter:
    case PerfCollective::kAllToAll:
    case PerfCollective::kGather:
    case PerfCollective::kScatter: return (n - 1) / n;
    case PerfCollective::kBroadcast:
    case PerfCollective::kReduce:
    case PerfCollective::kSendRecv: return 1.0;
  }
  return 1.0;
}

double algbw_bytes(PerfCollective coll, size_t param_count, size_t elt_size, int nranks) {
  const double bytes = static_cast<double>(param_count) * static_cast<double>(elt_size);
  switch (coll) {
    case PerfCollective::kAllGather:
    case PerfCollective::kReduceScatter:
    case PerfCollective::kAllToAll:
    case PerfCollective::kGather:
    case PerfCollective::kScatter: return bytes * nranks;
    default: return bytes;
  }
}

Bandwidth compute_bandwidth(PerfCollective coll, size_t param_count, size_t elt_size, int nranks, double seconds) {
  Bandwidth bw;
  bw.algbw = algbw_bytes(coll, param_count, elt_size, nranks) / 1.0e9 / seconds;
  bw.busbw = bw.algbw * busbw_factor(coll, nranks);
  return bw;
}

bool reports_errors(PerfCollective coll, bool in_place) {
  return !(in_place && (coll == PerfCollective::kAllToAll || coll == PerfCollective::kSendRecv));
}

bool runs_in_place(PerfCollective coll) { return coll != PerfCollective::kAllToAll; }

std::string format_number(double value, int width) {
  char buf[64];
  if (std::snprintf(buf, sizeof(buf), "%*.2f", width, value) <= width) return buf;
  if (std::snprintf(buf, sizeof(buf), "%*.1f", width, value) <= width) return buf;
  if (std::snprintf(buf, sizeof(buf), "%*.0f", width, value) <= width) return buf;
  std::snprintf(buf, sizeof(buf), width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

std::string format_banner(const BannerInfo& b) {
  std::string out;
  out += printf_string("# cclab perf %s nccl-headers=%d nccl-library=%d\n", CCLAB_VERSION_STRING, NCCL_VERSION_CODE,
                       b.library_version);
  out += printf_string("# Collective test starting: %s\n", b.collective.c_str());
  const bool factor = b.step_factor > 1;
  out += printf_string(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %llu(%s) warmup iters: %d iters: %d agg iters: %d "
      "validation: %d graph: 0 unalign: 0\n",
      b.threads, b.gpus, b.min_bytes, b.max_bytes,
      static_cast<unsigned long long>(factor ? b.step_factor : b.step_bytes), factor ? "factor" : "bytes",
      b.warmup_iters, b.iters, b.agg_iters, b.check_iters);
  if (b.blocking == 1) out += "# Blocking Enabled: NULL stream, every call returns when the collective is complete \n";
  out += "#\n";
  out += "# Using devices\n";
  return out;
}

std::string format_rank_line(const RankInfo& r) {
  const std::string head = printf_string("#  Rank %2d Group %2d Pid %6d on %10s device %2d ", r.rank, r.group, r.pid,
                                         r.host.c_str(), r.device);
  if (r.bus_id.empty()) return head + "[cclab " + r.backend + "]\n";
  return head + "[" + r.bus_id + "] " + r.device_name + " (cclab " + r.backend + ")\n";
}

std::string format_column_header() {
  std::string out = "#\n";
  out += printf_string("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
                       "", "", "", "", "");
  out += printf_string("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type",
                       "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  out += printf_string("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "",
                       "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return out;
}

std::string format_row_start(size_t bytes, size_t count, const char* type, const char* op, int root) {
  return printf_string("%12zu  %12zu  %8s  %6s  %6d", bytes, count, type, op, root);
}

std::string format_row_half(double time_us, double algbw, double busbw, int64_t wrong) {
  const std::string t = format_number(time_us, 7), a = format_number(algbw, 6), b = format_number(busbw, 6);
  if (wrong < 0) return printf_string("  %7s  %6s  %6s  %5s", t.c_str(), a.c_str(), b.c_str(), "N/A");
  return printf_string("  %7s  %6s  %6s  %5g", t.c_str(), a.c_str(), b.c_str(), static_cast<double>(wrong));
}

std::string format_row_half_skipped() { return printf_string("  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A"); }

std::string format_footer(int64_t error_count, double avg_busbw, const std::string& collective) {
  std::string out;
  out += printf_string("# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(error_count),
                       error_count ? "FAILED" : "OK");
  out += printf_string("# %-20s : %g \n", "Avg bus bandwidth", avg_busbw);
  out += "#\n";
  out += printf_string("# Collective test concluded: %s\n", collective.c_str());
  out += "#\n";
  return out;
}

}  // namespace cclab

// runtime/cli/sim_cmd.h - `cclab sim`: `cclab perf` on the simulator (sim/sim.h). The same nccl-tests
// flags and table, computed by simulate() on a SimGrid model of a machine or cluster instead of measured.
//
//   cclab sim all_reduce --topo dgx-h100 -b 1M -e 1G -f 2
//   cclab sim all_reduce --topo dgx-h100:4 -b 8 -e 8G --algo ring --proto simple --csv out.csv
//   cclab sim all_gather --topo dgx-a100 -b 64M --payload            move real bytes, check them
//   cclab sim all_reduce --topo dgx-h100:2 -b 1M -e 1G --compare "--nvlink-bw 450" "--nvlink-bw 900"
//   cclab sim --calibration                                         the simulator's constants
//
// Split in two translation units so that the pure half tests without the simulator's driver:
//   sim_cmd.cc       flags -> SimCmdOptions (SimConfig + output options), and every text/CSV/JSON
//                    format from a SimResult (tests fabricate results)
//   sim_cmd_main.cc  sim_main: runs simulate(), the progress line, writes the files
// Exit status of sim_main: 0 ok, 1 a payload result was wrong, 2 bad usage, 3 the simulation failed (or
// an output file could not be written).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reduce_ops.h"  // RedOpKind (sim.h uses it without including it)
#include "perf_options.h"  // PerfCollective
#include "sim/sim.h"

namespace cclab {

constexpr int kSimExitOk = 0;
constexpr int kSimExitWrong = 1;
constexpr int kSimExitUsage = 2;
constexpr int kSimExitFailed = 3;

// The environment variables `cclab sim` falls back to (nullptr = unset), as the runtime reads them.
struct SimEnv {
  const char* algo = nullptr;          // NCCL_ALGO
  const char* proto = nullptr;         // NCCL_PROTO
  const char* min_channels = nullptr;  // NCCL_MIN_NCHANNELS
  const char* max_channels = nullptr;  // NCCL_MAX_NCHANNELS
};
SimEnv sim_env_from_process();  // getenv of the four

// One simulation to run: its config plus how it was described on the command line.
struct SimRun {
  sim::SimConfig config;
  std::string topo_label;    // "dgx-h100", "dgx-h100:4" or the --xml path, for headers
  std::string algo_source;   // "--algo", "NCCL_ALGO" or "" (the tuner's choice)
  std::string proto_source;  // "--proto", "NCCL_PROTO" or ""
};

struct SimCmdOptions {
  std::string coll_arg = "all_reduce";  // as given
  SimRun run;                           // the base flags (what runs without --compare)
  // --compare "A" "B": the base flags with each string's flags on top (last wins).
  bool compare = false;
  std::string compare_flags[2];
  SimRun compare_runs[2];
  // Output.
  std::string csv_path, json_path, events_path;  // "" = not written; "-" = stdout
  int links = 0;                                 // --links N busiest links (0: none)
  bool calibration = false;                      // --calibration: print the table and exit
  bool progress = true;                          // false: --no-progress
};

struct SimCmdParse {
  bool ok = false;
  bool help = false;
  std::string message;  // why parsing failed, naming the flag and its value
  SimCmdOptions options;
};

// Parses the arguments after "sim". The environment is passed in (tests) or read (second form).
SimCmdParse parse_sim_options(const std::vector<std::string>& args, const SimEnv& env);
SimCmdParse parse_sim_options(const std::vector<std::string>& args);
std::string sim_usage();

// "all_reduce" ... "reduce" -> CollKind (cclab perf's names); false for anything else.
// "all_reduce" ... "sendrecv" (cclab perf's names): the collective, and for alltoall, gather, scatter and
// sendrecv (kSendRecv) the point-to-point pattern (*p2p may be null).
bool sim_collective_from_name(const std::string& name, CollKind* coll, P2pPattern* p2p = nullptr);
const char* sim_collective_name(CollKind coll);        // "all_reduce", ...; kSendRecv: "sendrecv"
const char* sim_collective_name(const sim::SimConfig& cfg);  // the config's, point-to-point ones included
std::string sim_collective_names();  // "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, ..."
// The config's collective as `cclab perf` knows it; false for none.
bool sim_perf_collective(const sim::SimConfig& cfg, PerfCollective* out);
// Every row's algbw and busbw from cclab perf's compute_bandwidth (nccl-tests' formulas: perf_report.h),
// so that `cclab sim` and `cclab perf` print the same bandwidths for the same time.
void sim_apply_perf_bandwidth(const sim::SimConfig& cfg, sim::SimResult* r);
const char* sim_op_label(RedOpKind op);          // cclab perf's spelling: "sum", "avg", "mulsum", ...
const char* sim_type_label(sim::SimType type);   // nccl-tests' spelling: "float", "half", ...
const char* sim_level_label(sim::SimLevel level);  // "auto", "step", "flow"

// Splits a --compare string into arguments at whitespace; single or double quotes group.
std::vector<std::string> split_flags(const std::string& text);

// ---- text --------------------------------------------------------------------------------------------
// The comment block before the table: what runs where, the model, the level, the what-ifs.
std::string format_sim_banner(const SimRun& run, const sim::SimResult& result);
// "#" then the column-header lines: nccl-tests' size count type redop root time algbw busbw #wrong, then
// algo proto nch predicted level.
std::string format_sim_column_header();
// One row per size (config gives the type, op and root columns).
std::string format_sim_row(const sim::SimConfig& config, const sim::SimSizeResult& s);
// Header + rows.
std::string format_sim_table(const sim::SimConfig& config, const sim::SimResult& result);
// Mean busbw over the rows (nccl-tests' "Avg bus bandwidth").
double sim_avg_busbw(const sim::SimResult& result);
// Sum of SimSizeResult::wrong over checked rows (-1 when no row was checked).
int64_t sim_wrong_total(const sim::SimResult& result);
// "# Out of bounds values : N OK|FAILED" (payload runs only), "# Avg bus bandwidth : X", "#",
// "# Simulated in W s wall, peak memory M MiB".
std::string format_sim_footer(const sim::SimResult& result);
// The whole stdout report of one run: banner, table, footer.
std::string format_sim_report(const SimRun& run, const sim::SimResult& result);

// The `n` links that moved the most bytes: name, GB, average GB/s over the simulated run (bytes / the
// sum of every size's (iters + warmup) x time), GB/s while busy.
std::string format_sim_links(const sim::SimConfig& config, const sim::SimResult& result, int n);

// Degraded fabric (--degrade/--fail/--straggler/--jitter): a line per degraded element naming the ring and
// tree channels whose connections cross it ("m0.nic3 at 50% from 0 us: carried by ring channels 0, 8 (rank
// 7 -> 8)"); with `healthy` (the same run without degradation) each line ends with the largest size's
// busbw healthy -> degraded, and a table of every size follows. "" when nothing is degraded.
// `label` starts the heading ("B: " under a --compare table).
std::string format_sim_degraded(const sim::SimResult& result, const sim::SimResult* healthy,
                                const std::string& label = "");
// ": carried by ring channels 0, 8 (rank 7 -> 8); tree channel 0 (rank 8 -> 0)" for one element.
// `ran`: the algorithm of the run (SimSizeResult::algo, "NVLSTree"): its edges are named first.
std::string format_sim_carriers(const sim::SimDegraded& d, const std::string& ran = "");

// --csv: a header line, then one line per size. With `variant` non-empty (compare) a first column
// "variant" holds it (then header = false skips the header line for the second run).
std::string sim_csv_header(bool with_variant);
std::string format_sim_csv(const sim::SimConfig& config, const sim::SimResult& result,
                           const std::string& variant = "", bool header = true);
// --json: {collective, topo, machines, nranks, payload, ..., what_if {...}, calibration {...},
// rows [...], links [...]} as text (indented).
// With `healthy` (a degraded run's healthy twin): degrade.healthy_rows, that run's rows
// {bytes, time_us, algbw, busbw, algo, proto, nchannels, level}.
std::string format_sim_json(const SimRun& run, const sim::SimResult& result,
                            const sim::SimResult* healthy = nullptr);
// --json with --compare: {"compare": true, "a": {"flags": "...", <as above>}, "b": {...}}.
std::string format_sim_compare_json(const SimCmdOptions& options, const sim::SimResult& a,
                                    const sim::SimResult& b);

// --compare: "# A: flags", "# B: flags", then per size: A's time algbw busbw algo/proto, B's, and the
// ratios B/A of busbw and of time. Sizes are matched by bytes.
std::string format_sim_compare(const SimCmdOptions& options, const sim::SimResult& a, const sim::SimResult& b);

// ---- run ---------------------------------------------------------------------------------------------
// Runs `cclab sim` with the arguments after "sim" (sim_cmd_main.cc).
int sim_main(const std::vector<std::string>& args);

}  // namespace cclab

// runtime/cli/sim_cmd_main.cc - `cclab sim` itself (see sim_cmd.h): runs simulate(), shows progress on
// a terminal, prints the report and writes the --csv/--json/--events files. Kept apart from sim_cmd.cc
// so that the pure half links without the simulator's driver.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "sim_cmd.h"

namespace cclab {
namespace {

// A one-line "[#####.....] 12/24 sizes" on stderr, redrawn in place; only on a terminal.
class ProgressLine {
 public:
  ProgressLine(bool enabled, const char* label) : enabled_(enabled), label_(label) {}
  ~ProgressLine() { clear(); }
  void update(int done, int total) {
    if (!enabled_ || total <= 0) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(static_cast<long long>(kWidth) * done / total);
    std::string bar(static_cast<size_t>(filled), '#');
    bar += std::string(static_cast<size_t>(kWidth - filled), '.');
    const int n = std::fprintf(stderr, "\r%s[%s] %d/%d sizes", label_, bar.c_str(), done, total);
    if (n > width_) width_ = n;
    std::fflush(stderr);
  }
  void clear() {
    if (!enabled_ || width_ == 0) return;
    std::fprintf(stderr, "\r%*s\r", width_, "");
    std::fflush(stderr);
    width_ = 0;
  }
  sim::SimProgress callback() {
    if (!enabled_) return nullptr;
    return [this](int done, int total) { update(done, total); };
  }

 private:
  bool enabled_;
  const char* label_;
  int width_ = 0;
};

// Writes `text` to `path` ("-" = stdout). False with a message on stderr.
bool write_output(const std::string& path, const std::string& text, const char* flag) {
  if (path == "-") {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return true;
  }
  std::ofstream f(path, std::ios::binary);
  if (f) f << text;
  if (!f) {
    std::fprintf(stderr, "cclab sim: %s: cannot write '%s'\n", flag, path.c_str());
    return false;
  }
  return true;
}

bool run_one(const sim::SimConfig& cfg, bool progress, const char* label, sim::SimResult* out) {
  ProgressLine line(progress, label);
  std::string error;
  const bool ok = sim::simulate(cfg, out, &error, line.callback());
  line.clear();
  if (ok) sim_apply_perf_bandwidth(cfg, out);
  if (!ok) std::fprintf(stderr, "cclab sim: %s%s\n", label, error.c_str());
  return ok;
}

// The degradation's link names and ranks, against the model the run builds: a typo is a usage error that
// lists the closest names. A model that cannot be built is left to the simulation to report.
bool degrade_names_ok(const sim::SimConfig& cfg, const char* label) {
  if (!cfg.degrade.any()) return true;
  Topology topo;
  std::string error;
  if (!sim::build_model(cfg, &topo, &error)) return true;
  const int nranks = cfg.nranks > 0 ? cfg.nranks : static_cast<int>(topo.gpus().size());
  if (sim::check_degradation(cfg.degrade, topo, nranks, &error)) return true;
  std::fprintf(stderr, "cclab sim: %s%s\n", label, error.c_str());
  return false;
}

}  // namespace

int sim_main(const std::vector<std::string>& args) {
  const SimCmdParse parsed = parse_sim_options(args);
  if (!parsed.ok) {
    std::fprintf(stderr, "%s\n", parsed.message.c_str());
    return kSimExitUsage;
  }
  if (parsed.help) {
    std::fputs(sim_usage().c_str(), stdout);
    return kSimExitOk;
  }
  SimCmdOptions o = parsed.options;
  o.run.config.command = "cclab sim";
  for (const std::string& a : args) o.run.config.command += " " + a;
  if (o.calibration) {
    std::fputs(o.run.config.calibration.describe().c_str(), stdout);
    return kSimExitOk;
  }
  // A file the user named that cannot be read is a usage error, not a simulation failure.
  for (const SimRun* r : {&o.run, &o.compare_runs[0], &o.compare_runs[1]}) {
    if (!r->config.topo_xml.empty() && access(r->config.topo_xml.c_str(), R_OK) != 0) {
      std::fprintf(stderr, "cclab sim: --xml: cannot read '%s'\n", r->config.topo_xml.c_str());
      return kSimExitUsage;
    }
    if (!o.compare) break;
  }
  if (!degrade_names_ok(o.run.config, "") ||
      (o.compare && (!degrade_names_ok(o.compare_runs[0].config, "--compare A: ") ||
                     !degrade_names_ok(o.compare_runs[1].config, "--compare B: "))))
    return kSimExitUsage;
  const bool progress = o.progress && isatty(2) != 0;
  // A file written to stdout ("-") is for a pipe (jq, a CSV reader): the report goes to stderr then.
  FILE* report =
      o.csv_path == "-" || o.json_path == "-" || o.events_path == "-" ? stderr : stdout;
  bool files_ok = true;

  if (o.compare) {
    sim::SimResult a, b;
    if (!run_one(o.compare_runs[0].config, progress, "A: ", &a)) return kSimExitFailed;
    if (!run_one(o.compare_runs[1].config, progress, "B: ", &b)) return kSimExitFailed;
    std::fputs(format_sim_compare(o, a, b).c_str(), report);
    std::fputs(format_sim_degraded(a, nullptr, "A: ").c_str(), report);
    std::fputs(format_sim_degraded(b, nullptr, "B: ").c_str(), report);
    if (o.links > 0) {
      std::fputs(("# A:" + format_sim_links(o.compare_runs[0].config, a, o.links)).c_str(), report);
      std::fputs(("# B:" + format_sim_links(o.compare_runs[1].config, b, o.links)).c_str(), report);
    }
    std::fflush(report);
    if (!o.csv_path.empty()) {
      files_ok &= write_output(o.csv_path,
                               format_sim_csv(o.compare_runs[0].config, a, "A") +
                                   format_sim_csv(o.compare_runs[1].config, b, "B", false),
                               "--csv");
    }
    if (!o.json_path.empty()) files_ok &= write_output(o.json_path, format_sim_compare_json(o, a, b), "--json");
    if (!files_ok) return kSimExitFailed;
    return sim_wrong_total(a) > 0 || sim_wrong_total(b) > 0 ? kSimExitWrong : kSimExitOk;
  }

  // A degraded fabric is measured against the same run on the healthy one (no files, no trace).
  sim::SimResult healthy;
  const bool degraded = o.run.config.degrade.any();
  if (degraded) {
    sim::SimConfig h = o.run.config;
    h.degrade = sim::Degradation{};
    if (h.level == sim::SimLevel::kAuto && o.run.config.degrade.needs_step()) h.level = sim::SimLevel::kStep;  // alike
    h.trace_path.clear();
    h.live_path.clear();
    h.record_events = false;
    if (!run_one(h, progress, "healthy: ", &healthy)) return kSimExitFailed;
  }
  sim::SimResult res;
  if (!run_one(o.run.config, progress, "", &res)) return kSimExitFailed;
  std::fputs(format_sim_report(o.run, res).c_str(), report);
  if (degraded) std::fputs(format_sim_degraded(res, &healthy).c_str(), report);
  if (o.links > 0) std::fputs(format_sim_links(o.run.config, res, o.links).c_str(), report);
  std::fflush(report);
  if (!o.csv_path.empty()) files_ok &= write_output(o.csv_path, format_sim_csv(o.run.config, res), "--csv");
  if (!o.json_path.empty()) files_ok &= write_output(o.json_path, format_sim_json(o.run, res, degraded ? &healthy : nullptr), "--json");
  if (!o.events_path.empty()) files_ok &= write_output(o.events_path, sim::format_events(res.events), "--events");
  if (!files_ok) return kSimExitFailed;
  return sim_wrong_total(res) > 0 ? kSimExitWrong : kSimExitOk;
}

}  // namespace cclab

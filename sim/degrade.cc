// sim/degrade.cc - the degradation flags' values and their link names (degrade.h).
#include "sim/degrade.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cclab {
namespace sim {

std::string fmt(const char* f, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, f, v);
  return buf;
}

namespace {

// A whole string as a finite number; false otherwise.
bool number(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// "100us", "2ms", "0.5s", "100" (us) -> microseconds.
bool time_us(const std::string& s, double* out) {
  struct Unit {
    const char* suffix;
    double scale;
  };
  static const Unit kUnits[] = {{"us", 1}, {"ms", 1e3}, {"ns", 1e-3}, {"s", 1e6}};
  for (const Unit& u : kUnits) {
    const size_t n = std::string(u.suffix).size();
    if (s.size() > n && s.compare(s.size() - n, n, u.suffix) == 0) {
      double v = 0;
      if (!number(s.substr(0, s.size() - n), &v)) return false;
      *out = v * u.scale;
      return true;
    }
  }
  return number(s, out);
}

// Splits "LINK[@TIME]"; *at_us 0 without a time.
bool split_time(const std::string& flag, const std::string& value, std::string* link, double* at_us,
                std::string* error, const std::string& shown = "") {
  const size_t at = value.rfind('@');
  *link = value.substr(0, at);
  *at_us = 0;
  if (at != std::string::npos) {
    const std::string t = value.substr(at + 1);
    if (!time_us(t, at_us) || *at_us < 0) {
      *error = flag + " '" + (shown.empty() ? value : shown) + "': bad time '" + t + "' (expected a simulated time >= 0 such as 100us, 2ms, 0.5s)";
      return false;
    }
  }
  if (link->empty()) {
    *error = flag + " '" + (shown.empty() ? value : shown) + "': no link or node named (expected e.g. m0.gpu3-m0.nvs0 or m0.nic3)";
    return false;
  }
  return true;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

int node_named(const Topology& topo, const std::string& name) {
  for (size_t i = 0; i < topo.nodes.size(); ++i)
    if (topo.nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

bool Degradation::needs_step() const {
  if (jitter_pct > 0) return true;
  for (const LinkChange& c : links)
    if (c.fail || c.at_us > 0) return true;
  for (const auto& s : straggler_from_us)
    if (s.second > 0) return true;
  return false;
}

double Degradation::straggle_at(int rank, double now_us) const {
  auto it = stragglers.find(rank);
  if (it == stragglers.end()) return 1.0;
  auto from = straggler_from_us.find(rank);
  return from != straggler_from_us.end() && now_us < from->second ? 1.0 : it->second;
}

std::string Degradation::describe() const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  for (const LinkChange& c : links)
    add(c.fail ? c.target + " fails at " + fmt("%g", c.at_us) + " us"
               : c.target + " x" + fmt("%g", c.factor) + " from " + fmt("%g", c.at_us) + " us");
  for (const auto& s : stragglers) {
    auto from = straggler_from_us.find(s.first);
    add("rank " + std::to_string(s.first) + " " + fmt("%g", s.second) + "x slower" +
        (from != straggler_from_us.end() && from->second > 0 ? " from " + fmt("%g", from->second) + " us" : ""));
  }
  if (jitter_pct > 0)
    add("jitter " + fmt("%g", jitter_pct) + "% (seed " + std::to_string(jitter_seed) + ")" +
        (jitter_from_us > 0 ? " from " + fmt("%g", jitter_from_us) + " us" : ""));
  return out;
}

bool parse_degrade(const std::string& value, Degradation* d, std::string* error) {
  const size_t eq = value.rfind('=');
  if (eq == std::string::npos) {
    *error = "--degrade '" + value + "': expected LINK=FACTOR[@TIME] (e.g. m0.nic3=0.5@100us)";
    return false;
  }
  LinkChange c;
  std::string rest = value.substr(eq + 1);
  const size_t at = rest.find('@');
  const std::string f = rest.substr(0, at);
  if (!number(f, &c.factor) || !(c.factor > 0)) {
    *error = "--degrade '" + value + "': bad factor '" + f + "' (expected a bandwidth multiplier > 0, e.g. 0.5; " +
             "--fail turns a link off)";
    return false;
  }
  if (!split_time("--degrade", value.substr(0, eq) + (at == std::string::npos ? "" : rest.substr(at)), &c.target,
                  &c.at_us, error, value))
    return false;
  d->links.push_back(c);
  return true;
}

bool parse_fail(const std::string& value, Degradation* d, std::string* error) {
  LinkChange c;
  c.fail = true;
  c.factor = 0;
  if (!split_time("--fail", value, &c.target, &c.at_us, error)) return false;
  d->links.push_back(c);
  return true;
}

bool parse_straggler(const std::string& value, Degradation* d, std::string* error) {
  size_t pos = 0;
  do {
    const size_t comma = value.find(',', pos);
    const std::string item = value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? value.size() + 1 : comma + 1;
    const size_t eq = item.find('=');
    double rank = -1, factor = 0, from = 0;
    const size_t at = item.find('@');
    if (at != std::string::npos && (!time_us(item.substr(at + 1), &from) || from < 0)) {
      *error = "--straggler '" + value + "': bad time '" + item.substr(at + 1) +
               "' (expected a simulated time >= 0 such as 100us, 2ms, 0.5s)";
      return false;
    }
    const std::string fstr = eq == std::string::npos ? "" : item.substr(eq + 1, at == std::string::npos ? std::string::npos : at - eq - 1);
    if (eq == std::string::npos || !number(item.substr(0, eq), &rank) || rank < 0 || rank != std::floor(rank) ||
        rank > 1e6) {
      *error = "--straggler '" + value + "': expected RANK=FACTOR[,RANK=FACTOR...] with RANK a rank (e.g. 3=2)";
      return false;
    }
    if (!number(fstr, &factor) || !(factor > 0) || factor > 1e6) {
      *error = "--straggler '" + value + "': bad factor '" + fstr +
               "' (expected how many times slower its data loops run, > 0, e.g. 2)";
      return false;
    }
    d->stragglers[static_cast<int>(rank)] = factor;
    d->straggler_from_us[static_cast<int>(rank)] = from;
  } while (pos <= value.size());
  return true;
}

bool parse_jitter(const std::string& value, Degradation* d, std::string* error) {
  const size_t comma = value.find(',');
  double pct = 0;
  const std::string p = value.substr(0, comma);
  if (!number(p, &pct) || !(pct > 0) || pct > 1000) {
    *error = "--jitter '" + value + "': bad percentage '" + p + "' (expected 0 < PCT <= 1000[,seed=N][,from=TIME])";
    return false;
  }
  uint64_t seed = 1;
  double from = 0;
  for (size_t pos = comma; pos != std::string::npos;) {
    const size_t next = value.find(',', pos + 1);
    const std::string s = value.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    pos = next;
    char* end = nullptr;
    if (s.compare(0, 5, "from=") == 0 && time_us(s.substr(5), &from) && from >= 0) continue;
    if (s.compare(0, 5, "seed=") != 0 || s.size() == 5 ||
        (seed = std::strtoull(s.c_str() + 5, &end, 10), *end != '\0') || s[5] == '-') {
      *error = "--jitter '" + value + "': expected PCT[,seed=N][,from=TIME] with N a non-negative integer and TIME a " +
               "simulated time (100us, 2ms), got '" + s + "'";
      return false;
    }
  }
  d->jitter_pct = pct;
  d->jitter_seed = seed;
  d->jitter_from_us = from;
  return true;
}

bool resolve_link_target(const Topology& topo, const std::string& target, std::vector<int>* links,
                         std::string* error) {
  links->clear();
  const int nl = static_cast<int>(topo.links.size());
  auto name_of = [&](int l) { return topo.nodes[topo.links[l].from].name + "->" + topo.nodes[topo.links[l].to].name; };
  // "A->B": one direction; a link name of that form is exact.
  for (int l = 0; l < nl; ++l)
    if (name_of(l) == target) links->push_back(l);
  if (!links->empty()) return true;
  // "A-B": both directions (node names never contain '-' followed by a node name... split at each '-').
  for (size_t dash = target.find('-'); dash != std::string::npos; dash = target.find('-', dash + 1)) {
    const int a = node_named(topo, target.substr(0, dash)), b = node_named(topo, target.substr(dash + 1));
    if (a < 0 || b < 0) continue;
    for (int l = 0; l < nl; ++l) {
      const TopoLink& k = topo.links[l];
      if ((k.from == a && k.to == b) || (k.from == b && k.to == a)) links->push_back(l);
    }
    if (!links->empty()) return true;
    *error = "'" + target + "': " + topo.nodes[a].name + " and " + topo.nodes[b].name + " are not joined by a link";
    return false;
  }
  // A node: every link from or to it.
  const int n = node_named(topo, target);
  if (n >= 0) {
    for (int l = 0; l < nl; ++l)
      if (topo.links[l].from == n || topo.links[l].to == n) links->push_back(l);
    if (!links->empty()) return true;
    *error = "'" + target + "': node " + target + " has no links";
    return false;
  }
  // Unknown: the closest names, links and nodes.
  std::vector<std::pair<size_t, std::string>> cands;
  for (const TopoNode& k : topo.nodes) cands.emplace_back(edit_distance(target, k.name), k.name);
  for (int l = 0; l < nl; ++l) {
    const std::string nm = name_of(l);
    cands.emplace_back(edit_distance(target, nm), nm);
    const std::string both = topo.nodes[topo.links[l].from].name + "-" + topo.nodes[topo.links[l].to].name;
    cands.emplace_back(edit_distance(target, both), both);
  }
  std::sort(cands.begin(), cands.end());
  cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
  std::string close;
  for (size_t i = 0; i < cands.size() && i < 5; ++i) close += (i ? ", " : "") + cands[i].second;
  *error = "no link or node named '" + target + "' in " + topo.name + " (closest: " + close +
           "; `cclab topo` and `cclab sim --links N` print the names)";
  return false;
}

bool check_degradation(const Degradation& d, const Topology& topo, int nranks, std::string* error) {
  std::vector<int> links;
  for (const LinkChange& c : d.links) {
    if (!resolve_link_target(topo, c.target, &links, error)) {
      *error = std::string(c.fail ? "--fail" : "--degrade") + ": " + *error;
      return false;
    }
  }
  for (const auto& s : d.stragglers)
    if (s.first >= nranks) {
      *error = "--straggler: rank " + std::to_string(s.first) + " is not a rank (the run has " +
               std::to_string(nranks) + ": 0-" + std::to_string(nranks - 1) + ")";
      return false;
    }
  return true;
}

double jitter_unit(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = seed;
  for (uint64_t v : {a, b, c}) {
    x += 0x9E3779B97F4A7C15ull + v;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
  }
  return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace sim
}  // namespace cclab

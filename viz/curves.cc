// viz/curves.cc - see curves.h.
#include "viz/curves.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace cclab {
namespace viz {
namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool parse_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return false;
  while (*end && std::isspace(static_cast<unsigned char>(*end))) ++end;
  if (*end) return false;
  *out = v;
  return true;
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// One CSV line into fields ("" quotes, "" inside quotes is a quote). False on an unterminated quote.
bool split_csv(const std::string& line, std::vector<std::string>* fields) {
  fields->clear();
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields->push_back(trim(cur));
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  if (quoted) return false;
  fields->push_back(trim(cur));
  return true;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  return out;
}

bool fail(std::string* error, const std::string& msg) {
  if (error) *error = msg;
  return false;
}

// ---- JSON ----------------------------------------------------------------------------------------
bool json_number(const nlohmann::json& row, const char* key, double* out) {
  auto it = row.find(key);
  if (it == row.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return true;
}

bool curve_from_json(const nlohmann::json& j, const std::string& name, const std::string& where,
                     const std::string& label, std::vector<Curve>* out, std::string* error) {
  const nlohmann::json* rows = &j;
  if (j.is_object()) {
    auto it = j.find("rows");
    if (it == j.end() || !it->is_array())
      return fail(error, name + ": " + where + "no \"rows\" array (expected `cclab sim --json` output)");
    rows = &*it;
  } else if (!j.is_array()) {
    return fail(error, name + ": " + where + "expected an object with \"rows\" or an array of rows");
  }
  Curve c;
  c.source = name;
  c.label = label;
  if (j.is_object()) {
    std::string extra;
    auto coll = j.find("collective");
    if (coll != j.end() && coll->is_string()) extra += coll->get<std::string>();
    auto topo = j.find("topo");
    if (topo != j.end() && topo->is_string() && !topo->get<std::string>().empty())
      extra += (extra.empty() ? "" : " ") + topo->get<std::string>();
    if (!extra.empty()) c.label += " (" + extra + ")";
  }
  for (size_t i = 0; i < rows->size(); ++i) {
    const nlohmann::json& row = (*rows)[i];
    const std::string at = name + ": " + where + "rows[" + std::to_string(i) + "]: ";
    if (!row.is_object()) return fail(error, at + "not an object");
    CurvePoint p;
    if (!json_number(row, "bytes", &p.bytes) && !json_number(row, "size", &p.bytes))
      return fail(error, at + "\"bytes\" is missing or not a number");
    if (!json_number(row, "busbw", &p.busbw)) return fail(error, at + "\"busbw\" is missing or not a number");
    json_number(row, "algbw", &p.algbw);
    if (!json_number(row, "time_us", &p.time_us)) json_number(row, "time", &p.time_us);
    c.points.push_back(p);
  }
  if (c.points.empty()) return fail(error, name + ": " + where + "no rows");
  out->push_back(std::move(c));
  return true;
}

bool parse_json(const std::string& text, const std::string& name, std::vector<Curve>* out, std::string* error) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return fail(error, name + ": invalid JSON: " + e.what());
  }
  const std::string label = base_name(name);
  if (j.is_object() && j.value("compare", false)) {
    for (const char* side : {"a", "b"}) {
      auto it = j.find(side);
      if (it == j.end() || !it->is_object())
        return fail(error, name + ": --compare output without \"" + std::string(side) + "\"");
      std::string l = label + " " + (side[0] == 'a' ? "A" : "B");
      auto flags = it->find("flags");
      if (flags != it->end() && flags->is_string() && !flags->get<std::string>().empty())
        l += " [" + flags->get<std::string>() + "]";
      if (!curve_from_json(*it, name, std::string("\"") + side + "\": ", l, out, error)) return false;
    }
    return true;
  }
  return curve_from_json(j, name, "", label, out, error);
}

// ---- CSV -----------------------------------------------------------------------------------------
bool parse_csv(const std::vector<std::string>& lines, size_t header_line, const std::string& name,
               std::vector<Curve>* out, std::string* error) {
  std::vector<std::string> head;
  split_csv(lines[header_line], &head);
  int col_bytes = -1, col_busbw = -1, col_algbw = -1, col_time = -1, col_variant = -1;
  for (size_t i = 0; i < head.size(); ++i) {
    const std::string& h = head[i];
    if (h == "bytes" || (h == "size" && col_bytes < 0)) col_bytes = static_cast<int>(i);
    else if (h == "busbw") col_busbw = static_cast<int>(i);
    else if (h == "algbw") col_algbw = static_cast<int>(i);
    else if (h == "time_us" || (h == "time" && col_time < 0)) col_time = static_cast<int>(i);
    else if (h == "variant") col_variant = static_cast<int>(i);
  }
  if (col_bytes < 0 || col_busbw < 0)
    return fail(error, name + ":" + std::to_string(header_line + 1) +
                           ": CSV header has no \"bytes\" and \"busbw\" columns (expected `cclab sim --csv` output)");
  std::map<std::string, size_t> by_variant;
  std::vector<Curve> curves;
  std::vector<std::string> f;
  for (size_t ln = header_line + 1; ln < lines.size(); ++ln) {
    const std::string line = trim(lines[ln]);
    if (line.empty() || line[0] == '#') continue;
    const std::string at = name + ":" + std::to_string(ln + 1) + ": ";
    if (!split_csv(line, &f)) return fail(error, at + "unterminated quote");
    if (f.size() != head.size())
      return fail(error, at + std::to_string(f.size()) + " fields, the header has " + std::to_string(head.size()));
    CurvePoint p;
    if (!parse_number(f[col_bytes], &p.bytes)) return fail(error, at + "bytes \"" + f[col_bytes] + "\" is not a number");
    if (!parse_number(f[col_busbw], &p.busbw)) return fail(error, at + "busbw \"" + f[col_busbw] + "\" is not a number");
    if (col_algbw >= 0) parse_number(f[col_algbw], &p.algbw);
    if (col_time >= 0) parse_number(f[col_time], &p.time_us);
    const std::string variant = col_variant >= 0 ? f[col_variant] : std::string();
    auto it = by_variant.find(variant);
    if (it == by_variant.end()) {
      it = by_variant.emplace(variant, curves.size()).first;
      Curve c;
      c.source = name;
      c.label = base_name(name) + (variant.empty() ? "" : " " + variant);
      curves.push_back(c);
    }
    curves[it->second].points.push_back(p);
  }
  if (curves.empty()) return fail(error, name + ": no data rows after the CSV header");
  for (Curve& c : curves) out->push_back(std::move(c));
  return true;
}

// ---- nccl-tests table ---------------------------------------------------------------------------------
bool parse_table(const std::vector<std::string>& lines, const std::string& name, std::vector<Curve>* out,
                 std::string* error) {
  Curve c;
  c.source = name;
  c.label = base_name(name);
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    const std::string line = trim(lines[ln]);
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::vector<std::string> tok;
    std::string w;
    while (in >> w) tok.push_back(w);
    double size = 0;
    if (tok.empty() || !parse_number(tok[0], &size)) continue;  // not a result row (a log line)
    const std::string at = name + ":" + std::to_string(ln + 1) + ": ";
    if (tok.size() < 9)
      return fail(error, at + "result row has " + std::to_string(tok.size()) +
                             " columns, expected size count type redop root time algbw busbw #wrong");
    CurvePoint p;
    p.bytes = size;
    // Out-of-place half at 5..8; in-place at 9..12 when out-of-place is N/A.
    int base = 5;
    if (tok[7] == "N/A" && tok.size() >= 12 && tok[11] != "N/A") base = 9;
    if (!parse_number(tok[base + 2], &p.busbw))
      return fail(error, at + "busbw \"" + tok[base + 2] + "\" is not a number");
    parse_number(tok[base], &p.time_us);
    parse_number(tok[base + 1], &p.algbw);
    c.points.push_back(p);
  }
  if (c.points.empty())
    return fail(error, name + ": no result rows (expected `cclab perf`/`cclab sim` output, --csv or --json)");
  out->push_back(std::move(c));
  return true;
}

}  // namespace

bool parse_curves(const std::string& text, const std::string& name, std::vector<Curve>* out, std::string* error) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i == text.size()) return fail(error, name + ": empty file");
  if (text[i] == '{' || text[i] == '[') return parse_json(text, name, out, error);
  const std::vector<std::string> lines = lines_of(text);
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    const std::string line = trim(lines[ln]);
    if (line.empty() || line[0] == '#') continue;
    if (line.find(',') != std::string::npos) return parse_csv(lines, ln, name, out, error);
    break;
  }
  return parse_table(lines, name, out, error);
}

bool load_curves(const std::string& path, std::vector<Curve>* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(error, path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_curves(ss.str(), path, out, error);
}

}  // namespace viz
}  // namespace cclab

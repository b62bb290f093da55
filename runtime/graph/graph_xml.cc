// runtime/graph/graph_xml.cc - NCCL's graph XML (NCCL_GRAPH_DUMP_FILE / NCCL_GRAPH_FILE).
//
// The format of NCCL 2.28.9 (src/graph/search.cc, ncclTopoGetXmlFromGraphs / ncclTopoGetGraphFromXml):
//   <graphs version="1">
//     <graph id pattern crossnic nchannels speedintra speedinter latencyinter typeintra typeinter
//            samechannels>
//       <channel>
//         <net dev="0"/>            the NIC the channel enters by (only when it crosses machines)
//         <gpu dev="0"/> ...        the GPUs of one machine in channel order
//         <net dev="0"/>            the NIC it leaves by
//       </channel> ...
//     </graph> ...
//   </graphs>
// Devs are written as NCCL writes them ("%#lx": 0, 0x1, ... 0xa) and read as NCCL reads them, in
// base 16 whether or not they start with 0x (so dev="10" is GPU 16). NVLS graphs (id 3) list only
// the first GPU of each channel, as NCCL does. Speeds are written with the fewest digits that read back
// exactly (NCCL writes %g, which gives the same text for the speeds of its ladders).
#include <errno.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <pugixml.hpp>
#include <set>

#include "graph/search.h"

namespace cclab {
namespace {

constexpr int kMaxChannels = 64;  // NCCL's MAXCHANNELS
constexpr int kNvlsGraphId = 3;

std::string fmt_double(double x) {
  char buf[64];
  for (int prec = 6; prec <= 17; ++prec) {
    snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (strtod(buf, nullptr) == x) break;
  }
  return buf;
}

std::string fmt_dev(long long dev) {  // NCCL's "%#lx"
  char buf[32];
  snprintf(buf, sizeof buf, "%#llx", dev);
  return buf;
}

bool is_nvls(const TopoGraph& g) { return g.id == kNvlsGraphId || g.pattern == GraphPattern::kNvls; }

bool parse_int(const char* s, int base, long long* out) {
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(s, &end, base);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_double(const char* s, double* out) {
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

class GraphXmlReader {
 public:
  GraphXmlReader(const std::string& text, const std::string& file, const Topology& topo)
      : text_(text), file_(file), topo_(topo) {}
  bool read(std::vector<TopoGraph*> graphs, std::string* error);

 private:
  bool fail_at(ptrdiff_t offset, const std::string& what) {
    if (error_.empty()) {
      size_t end = std::min(static_cast<size_t>(std::max<ptrdiff_t>(offset, 0)), text_.size());
      int line = 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + end, '\n'));
      error_ = file_ + ":" + std::to_string(line) + ": " + what;
    }
    return false;
  }
  bool fail(pugi::xml_node n, const std::string& what) { return fail_at(n.offset_debug(), what); }
  bool get_int(pugi::xml_node n, const char* name, bool required, long long def, long long* out) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a) {
      if (required) return fail(n, std::string("<") + n.name() + "> lacks the required attribute " + name);
      *out = def;
      return true;
    }
    if (!parse_int(a.value(), 10, out)) {
      return fail(n, std::string("<") + n.name() + "> attribute " + name + "=\"" + a.value() + "\" is not an integer");
    }
    return true;
  }
  bool get_double(pugi::xml_node n, const char* name, bool required, double* out) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a) {
      if (required) return fail(n, std::string("<") + n.name() + "> lacks the required attribute " + name);
      *out = 0;
      return true;
    }
    if (!parse_double(a.value(), out)) {
      return fail(n, std::string("<") + n.name() + "> attribute " + name + "=\"" + a.value() + "\" is not a number");
    }
    return true;
  }
  bool get_path_type(pugi::xml_node n, const char* name, PathType* out) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a) return fail(n, std::string("<graph> lacks the required attribute ") + name);
    if (!path_type_from_name(a.value(), out)) {
      return fail(n, std::string("<graph> attribute ") + name + "=\"" + a.value() +
                         "\" is not a path type (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS, NET, DIS)");
    }
    return true;
  }
  bool read_graph(pugi::xml_node x, TopoGraph* g);
  bool read_channel(pugi::xml_node x, const TopoGraph& g, std::vector<int>* intra, std::vector<int>* inter);

  const std::string& text_;
  const std::string& file_;
  const Topology& topo_;
  std::string error_;
};

bool GraphXmlReader::read(std::vector<TopoGraph*> graphs, std::string* error) {
  auto finish = [&](bool ok) {
    if (!ok && error) *error = error_;
    return ok;
  };
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_buffer(text_.data(), text_.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!r) {
    bool at_end = text_.find_first_not_of(" \t\r\n", std::min(static_cast<size_t>(r.offset), text_.size())) ==
                  std::string::npos;
    ptrdiff_t where = at_end ? static_cast<ptrdiff_t>(text_.find_last_not_of(" \t\r\n")) : r.offset;
    return finish(fail_at(where, std::string(at_end ? "truncated XML (unexpected end of file): " : "malformed XML: ") +
                                     r.description()));
  }
  pugi::xml_node root = doc.document_element();
  if (!root) return finish(fail_at(0, "no <graphs> element"));
  if (strcmp(root.name(), "graphs") != 0) {
    return finish(fail(root, std::string("expected <graphs>, found <") + root.name() + ">"));
  }
  long long version = 0;
  if (!get_int(root, "version", true, 0, &version)) return finish(false);
  if (version != 1) {
    return finish(fail(root, "<graphs> version " + std::to_string(version) + " is not supported (need 1)"));
  }
  // Read and check every <graph> before filling any, so that an error leaves the graphs untouched.
  std::map<int, TopoGraph> parsed;
  std::map<int, int> first_line;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (strcmp(c.name(), "graph") != 0) {
      return finish(fail(c, std::string("unknown element <") + c.name() + "> in <graphs> (expected <graph>)"));
    }
    TopoGraph g;
    if (!read_graph(c, &g)) return finish(false);
    if (parsed.count(g.id)) return finish(fail(c, "a second <graph id=\"" + std::to_string(g.id) + "\">"));
    parsed[g.id] = g;
  }
  for (TopoGraph* g : graphs) {
    if (g == nullptr) continue;
    auto it = parsed.find(g->id);
    if (it == parsed.end()) continue;
    const TopoGraph& p = it->second;
    g->pattern = p.pattern;
    g->cross_nic = p.cross_nic;
    g->nchannels = p.nchannels;
    g->bw_intra = p.bw_intra;
    g->bw_inter = p.bw_inter;
    g->latency_inter = p.latency_inter;
    g->type_intra = p.type_intra;
    g->type_inter = p.type_inter;
    g->same_channels = p.same_channels;
    g->intra = p.intra;
    g->inter = p.inter;
  }
  return finish(true);
}

bool GraphXmlReader::read_graph(pugi::xml_node x, TopoGraph* g) {
  long long id = 0, pattern = 0, crossnic = 0, nchannels = 0, same = 0;
  if (!get_int(x, "id", true, 0, &id) || !get_int(x, "pattern", true, 0, &pattern) ||
      !get_int(x, "crossnic", true, 0, &crossnic) || !get_int(x, "nchannels", true, 0, &nchannels) ||
      !get_double(x, "speedintra", true, &g->bw_intra) || !get_double(x, "speedinter", true, &g->bw_inter) ||
      !get_double(x, "latencyinter", false, &g->latency_inter) || !get_path_type(x, "typeintra", &g->type_intra) ||
      !get_path_type(x, "typeinter", &g->type_inter) || !get_int(x, "samechannels", true, 0, &same)) {
    return false;
  }
  if (id < 0 || id > 1000) return fail(x, "<graph> id " + std::to_string(id) + " is out of range");
  if (pattern < 1 || pattern > 6) {
    return fail(x, "<graph> pattern " + std::to_string(pattern) +
                       " is not one of NCCL's patterns (1 balanced tree, 2 split tree, 3 tree, 4 ring, 5 NVLS, "
                       "6 CollNet direct)");
  }
  // NCCL's graph 0 is the ring graph (pattern 4) and graph 1 the tree graph (a tree pattern, 1 to 3, as
  // its search may switch between them); the channels of any other pattern are read differently (an
  // NVLS channel lists one GPU), so a ring or tree read with one would not be the graph the file meant.
  if (id == 0 && pattern != static_cast<long long>(GraphPattern::kRing)) {
    return fail(x, "<graph id=\"0\"> (the ring graph) has pattern " + std::to_string(pattern) +
                       "; NCCL's ring graph has pattern 4 (ring)");
  }
  if (id == 1 && (pattern < 1 || pattern > 3)) {
    return fail(x, "<graph id=\"1\"> (the tree graph) has pattern " + std::to_string(pattern) +
                       "; NCCL's tree graph has pattern 1, 2 or 3 (balanced, split or plain tree)");
  }
  if (crossnic < 0 || crossnic > 2) return fail(x, "<graph> crossnic must be 0, 1 or 2");
  if (nchannels < 1 || nchannels > kMaxChannels) {
    return fail(x, "<graph> nchannels " + std::to_string(nchannels) + " is out of range (1.." +
                       std::to_string(kMaxChannels) + ")");
  }
  if (g->bw_intra < 0 || g->bw_inter < 0 || g->latency_inter < 0) {
    return fail(x, "<graph> speeds and latency must not be negative");
  }
  g->id = static_cast<int>(id);
  g->pattern = static_cast<GraphPattern>(pattern);
  g->cross_nic = crossnic != 0;
  g->same_channels = same != 0;
  g->nchannels = static_cast<int>(nchannels);
  int nchan = 0;
  bool any_nets = false, any_without = false;
  for (pugi::xml_node c = x.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (strcmp(c.name(), "channel") != 0) {
      return fail(c, std::string("unknown element <") + c.name() + "> in <graph> (expected <channel>)");
    }
    std::vector<int> intra, inter;
    if (!read_channel(c, *g, &intra, &inter)) return false;
    (inter.empty() ? any_without : any_nets) = true;
    if (any_nets && any_without) return fail(c, "some channels list <net> devices and others do not");
    g->intra.push_back(std::move(intra));
    if (!inter.empty()) g->inter.push_back(std::move(inter));
    ++nchan;
  }
  if (nchan != g->nchannels) {
    return fail(x, "<graph> says nchannels=\"" + std::to_string(g->nchannels) + "\" but holds " +
                       std::to_string(nchan) + " <channel> elements");
  }
  return true;
}

bool GraphXmlReader::read_channel(pugi::xml_node x, const TopoGraph& g, std::vector<int>* intra,
                                  std::vector<int>* inter) {
  int ngpus = topo_.gpus_per_machine();
  std::set<int> seen;
  for (pugi::xml_node c = x.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    bool is_gpu = strcmp(c.name(), "gpu") == 0;
    bool is_net = strcmp(c.name(), "net") == 0;
    if (!is_gpu && !is_net) {
      return fail(c, std::string("unknown element <") + c.name() + "> in <channel> (expected <gpu> or <net>)");
    }
    pugi::xml_attribute a = c.attribute("dev");
    if (!a) return fail(c, std::string("<") + c.name() + "> lacks the required attribute dev");
    long long dev = 0;
    if (!parse_int(a.value(), 16, &dev) || dev < 0) {
      return fail(c, std::string("<") + c.name() + "> attribute dev=\"" + a.value() +
                         "\" is not a hexadecimal device number");
    }
    dev &= (1LL << 56) - 1;  // NCCL_TOPO_ID(systemId, dev): the machine in the top byte
    if (is_gpu) {
      if (topo_.gpu_node(0, static_cast<int>(dev)) < 0) {
        return fail(c, "<gpu dev=\"" + std::string(a.value()) + "\">: the topology has no GPU " +
                           std::to_string(dev) + " (it has " + std::to_string(ngpus) + ")");
      }
      if (!seen.insert(static_cast<int>(dev)).second) {
        return fail(c, "GPU " + std::to_string(dev) + " appears twice in one channel");
      }
      if (!inter->empty() && inter->size() > 1) return fail(c, "a <gpu> after the channel's exit <net>");
      intra->push_back(static_cast<int>(dev));
    } else {
      bool found = false;
      for (int n : topo_.nets(0)) found = found || topo_.nodes[n].dev == dev;
      if (!found) {
        return fail(c, "<net dev=\"" + std::string(a.value()) + "\">: the topology has no NET " + std::to_string(dev));
      }
      if (inter->size() == 1 && intra->empty()) return fail(c, "two <net> before any <gpu> in one channel");
      if (inter->size() == 2) return fail(c, "more than two <net> in one channel");
      if (inter->empty() && !intra->empty()) return fail(c, "a channel's exit <net> without an entry <net>");
      inter->push_back(static_cast<int>(dev));
    }
  }
  if (inter->size() == 1) return fail(x, "a <channel> with an entry <net> but no exit <net>");
  if (is_nvls(g)) {
    if (intra->empty()) return fail(x, "an NVLS <channel> without its <gpu>");
  } else if (static_cast<int>(intra->size()) != ngpus) {
    std::string missing;
    for (int d = 0; d < ngpus; ++d) {
      if (!seen.count(d)) missing += (missing.empty() ? "" : ", ") + std::to_string(d);
    }
    return fail(x, "a <channel> lists " + std::to_string(intra->size()) + " GPUs but the machine has " +
                       std::to_string(ngpus) + " (missing: " + missing + ")");
  }
  return true;
}

}  // namespace

std::string graphs_xml_string(const std::vector<const TopoGraph*>& graphs) {
  std::string o = "<graphs version=\"1\">\n";
  for (const TopoGraph* g : graphs) {
    if (g == nullptr) continue;
    o += "  <graph id=\"" + std::to_string(g->id) + "\" pattern=\"" + std::to_string(static_cast<int>(g->pattern)) +
         "\" crossnic=\"" + std::to_string(g->cross_nic ? 1 : 0) + "\" nchannels=\"" + std::to_string(g->nchannels) +
         "\" speedintra=\"" + fmt_double(g->bw_intra) + "\" speedinter=\"" + fmt_double(g->bw_inter) +
         "\" latencyinter=\"" + fmt_double(g->latency_inter) + "\" typeintra=\"" + path_type_name(g->type_intra) +
         "\" typeinter=\"" + path_type_name(g->type_inter) + "\" samechannels=\"" +
         std::to_string(g->same_channels ? 1 : 0) + "\"";
    int nch = std::min<int>(g->nchannels, static_cast<int>(g->intra.size()));
    if (nch <= 0) {
      o += "/>\n";
      continue;
    }
    o += ">\n";
    for (int c = 0; c < nch; ++c) {
      o += "    <channel>\n";
      bool nets = c < static_cast<int>(g->inter.size()) && g->inter[c].size() >= 2;
      if (nets) o += "      <net dev=\"" + fmt_dev(g->inter[c][0]) + "\"/>\n";
      for (int dev : g->intra[c]) {
        o += "      <gpu dev=\"" + fmt_dev(dev) + "\"/>\n";
        if (is_nvls(*g)) break;  // NCCL writes only the first GPU of an NVLS channel
      }
      if (nets) o += "      <net dev=\"" + fmt_dev(g->inter[c][1]) + "\"/>\n";
      o += "    </channel>\n";
    }
    o += "  </graph>\n";
  }
  o += "</graphs>\n";
  return o;
}

bool write_graphs_xml(const std::vector<const TopoGraph*>& graphs, const std::string& path, std::string* error) {
  return write_text_file(path, graphs_xml_string(graphs), error);
}

bool read_graphs_xml_string(const std::string& text, const std::string& name_for_errors, const Topology& topo,
                            std::vector<TopoGraph*> graphs, std::string* error) {
  GraphXmlReader r(text, name_for_errors, topo);
  return r.read(std::move(graphs), error);
}

bool read_graphs_xml(const std::string& path, const Topology& topo, std::vector<TopoGraph*> graphs,
                     std::string* error) {
  std::string text;
  if (!read_text_file(path, &text, error)) return false;
  return read_graphs_xml_string(text, path, topo, std::move(graphs), error);
}

}  // namespace cclab

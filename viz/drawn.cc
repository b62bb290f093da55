// viz/drawn.cc - see drawn.h.
#include "viz/drawn.h"

#include <nlohmann/json.hpp>

#include "viz/model.h"

namespace cclab {
namespace viz {
namespace {

using Json = nlohmann::ordered_json;

Json point(V2 p) { return Json::array({p.x, p.y}); }
Json rect(const Rect& r) { return Json::array({r.x0, r.y0, r.x1, r.y1}); }
Json color(Color c) { return Json::array({red_of(c), green_of(c), blue_of(c), alpha_of(c)}); }

}  // namespace

void DrawnLayout::clear() {
  nodes.clear();
  machines.clear();
  links.clear();
  arrows.clear();
  chunks.clear();
  stuck_report = -1;
  stuck_summary.clear();
  stuck_ranks.clear();
  waits.clear();
  heatmap = DrawnHeatmap();
}

std::string DrawnLayout::to_json(const trace::Trace* t) const {
  Json j;
  j["width"] = width;
  j["height"] = height;
  j["view"] = view_name(view);
  j["at_us"] = at_us;
  const size_t nn = t ? t->nodes.size() : 0;
  Json ns = Json::array();
  for (const DrawnNode& n : nodes) {
    Json o;
    o["index"] = n.index;
    if (n.index >= 0 && static_cast<size_t>(n.index) < nn) {
      const trace::Node& node = t->nodes[n.index];
      o["name"] = node.name;
      o["kind"] = node.kind;
      o["machine"] = node.machine;
      o["rank"] = node.rank;
    }
    o["rect"] = rect(n.rect);
    if (!n.activity.empty()) o["activity"] = n.activity;
    ns.push_back(o);
  }
  j["nodes"] = ns;
  Json ms = Json::array();
  for (const DrawnMachine& m : machines) ms.push_back({{"machine", m.machine}, {"rect", rect(m.rect)}});
  j["machines"] = ms;
  Json ls = Json::array();
  for (const DrawnLink& l : links) {
    Json o;
    o["index"] = l.index;
    if (t && l.index >= 0 && static_cast<size_t>(l.index) < t->links.size()) {
      const trace::Link& link = t->links[l.index];
      auto name = [&](int i) { return i >= 0 && static_cast<size_t>(i) < nn ? t->nodes[i].name : std::string("?"); };
      o["from"] = name(link.from);
      o["to"] = name(link.to);
      o["kind"] = link.kind;
      o["capacity_gbs"] = link.gbs;
    }
    o["p0"] = point(l.p0);
    o["p1"] = point(l.p1);
    o["thickness"] = l.thickness;
    o["color"] = color(l.color);
    o["utilization"] = l.utilization;
    o["gbs"] = l.gbs;
    ls.push_back(o);
  }
  j["links"] = ls;
  Json as = Json::array();
  for (const DrawnArrow& a : arrows) {
    as.push_back({{"channel", a.channel}, {"from", a.from}, {"to", a.to}, {"p0", point(a.p0)}, {"p1", point(a.p1)},
                  {"thickness", a.thickness}, {"color", color(a.color)}, {"active", a.active}});
  }
  j["arrows"] = as;
  Json cs = Json::array();
  for (const DrawnChunk& c : chunks) cs.push_back({{"event", c.event}, {"pos", point(c.pos)}, {"color", color(c.color)}});
  j["chunks"] = cs;
  {
    Json st;
    st["report"] = stuck_report;
    st["summary"] = stuck_summary;
    Json rs = Json::array(), ws = Json::array();
    for (const DrawnStuckRank& r : stuck_ranks)
      rs.push_back({{"rank", r.rank}, {"rect", rect(r.rect)}, {"waiting", r.waiting}, {"culprit", r.culprit},
                    {"state", r.state}, {"color", color(r.color)}});
    for (const DrawnWait& w : waits)
      ws.push_back({{"from", w.from}, {"to", w.to}, {"p0", point(w.p0)}, {"control", point(w.control)},
                    {"p1", point(w.p1)}, {"label", w.label}});
    st["ranks"] = rs;
    st["waits"] = ws;
    j["stuck"] = st;
  }
  if (heatmap.present) {
    Json h;
    h["rect"] = rect(heatmap.rect);
    h["t0_us"] = heatmap.t0_us;
    h["t1_us"] = heatmap.t1_us;
    Json rows = Json::array();
    for (const DrawnHeatRow& r : heatmap.rows) {
      Json o{{"link", r.link}};
      if (t) o["name"] = link_name(*t, r.link);
      o["y0"] = r.y0;
      o["y1"] = r.y1;
      rows.push_back(o);
    }
    h["rows"] = rows;
    j["heatmap"] = h;
  }
  return j.dump(1) + "\n";
}

}  // namespace viz
}  // namespace cclab

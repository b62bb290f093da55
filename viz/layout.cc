// viz/layout.cc - see layout.h.
#include "viz/layout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "viz/colors.h"

namespace cclab {
namespace viz {
namespace {

using trace::Link;
using trace::Node;
using trace::Trace;

constexpr float kMargin = 8;
constexpr float kBoxGap = 14;
constexpr float kPad = 8;
constexpr float kHeader = 18;
constexpr float kNodeGap = 6;
constexpr double kPi = 3.14159265358979323846;

// Machine rows, top to bottom (a mirrored box uses them bottom to top).
enum RowKind { kRowNvs, kRowGpu, kRowPci, kRowCpu, kRowNic, kRowNet, kRowOther, kRowCount };

RowKind row_of(const Node& n) {
  if (n.kind == "nvswitch") return kRowNvs;
  if (n.kind == "gpu") return kRowGpu;
  if (n.kind == "pci") return kRowPci;
  if (n.kind == "cpu") return kRowCpu;
  if (n.kind == "nic") return kRowNic;
  if (n.kind == "net") return kRowNet;
  return kRowOther;
}

float max_width(RowKind k) {
  switch (k) {
    case kRowNvs: return 120;
    case kRowGpu: return 78;
    case kRowPci: return 60;
    case kRowCpu: return 70;
    case kRowNic: return 52;
    case kRowNet: return 46;
    default: return 60;
  }
}

float max_height(RowKind k) { return k == kRowGpu ? 40.0f : k == kRowNvs ? 24.0f : 22.0f; }

bool is_fabric(const Node& n) { return n.machine < 0 || n.kind == "switch"; }

struct Item {
  int node;
  float want;  // desired centre x
  float w;
};

// Places items in a row between lo and hi: ordered by desired centre, no overlap, inside the bounds.
void resolve_row(std::vector<Item>* items, float lo, float hi, std::vector<float>* cx_out) {
  std::vector<Item>& v = *items;
  if (v.empty()) return;
  std::stable_sort(v.begin(), v.end(), [](const Item& a, const Item& b) { return a.want < b.want; });
  const float span = hi - lo;
  float gap = kNodeGap;
  float sum = 0;
  for (const Item& it : v) sum += it.w;
  if (sum + gap * (v.size() - 1) > span) {
    gap = std::min(gap, span * 0.15f / std::max<size_t>(1, v.size() - 1));
    const float scale = (span - gap * (v.size() - 1)) / sum;
    for (Item& it : v) it.w *= scale;
  }
  std::vector<float> x(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    x[i] = std::max(lo, v[i].want - v[i].w * 0.5f);
    if (i > 0) x[i] = std::max(x[i], x[i - 1] + v[i - 1].w + gap);
  }
  for (size_t k = v.size(); k-- > 0;) {
    const float limit = k + 1 < v.size() ? x[k + 1] - gap - v[k].w : hi - v[k].w;
    x[k] = std::min(x[k], limit);
  }
  for (size_t i = 0; i < v.size(); ++i) {
    x[i] = std::max(x[i], lo);
    (*cx_out)[v[i].node] = x[i] + v[i].w * 0.5f;
  }
}

struct Builder {
  const Trace& t;
  TopoLayout* out;
  std::vector<std::vector<int>> adj;
  std::vector<float> cx, width;
  std::vector<char> placed;

  explicit Builder(const Trace& tr, TopoLayout* o) : t(tr), out(o) {
    const size_t n = t.nodes.size();
    adj.resize(n);
    for (const Link& l : t.links) {
      if (l.from < 0 || l.to < 0 || l.from >= static_cast<int>(n) || l.to >= static_cast<int>(n)) continue;
      adj[l.from].push_back(l.to);
      adj[l.to].push_back(l.from);
    }
    for (auto& a : adj) {
      std::sort(a.begin(), a.end());
      a.erase(std::unique(a.begin(), a.end()), a.end());
    }
    cx.assign(n, 0);
    width.assign(n, 0);
    placed.assign(n, 0);
  }

  bool barycentre(int node, float* x) const {
    float sum = 0;
    int k = 0;
    for (int o : adj[node])
      if (placed[o]) {
        sum += cx[o];
        ++k;
      }
    if (!k) return false;
    *x = sum / k;
    return true;
  }

  // Places one row's nodes: `even` rows are spaced evenly in the given order; the others at the
  // barycentre of their placed neighbours (nodes without one get even slots).
  void place_row(std::vector<int> nodes, RowKind kind, float lo, float hi, bool even) {
    if (nodes.empty()) return;
    const float slot = (hi - lo) / nodes.size();
    const float w = std::min(max_width(kind), slot * 0.86f);
    std::vector<Item> items;
    for (size_t i = 0; i < nodes.size(); ++i) {
      float want = lo + (i + 0.5f) * slot;
      if (!even) barycentre(nodes[i], &want);
      items.push_back({nodes[i], want, w});
    }
    resolve_row(&items, lo, hi, &cx);
    for (const Item& it : items) {
      width[it.node] = it.w;
      placed[it.node] = 1;
    }
  }
};

}  // namespace

TopoLayout layout_topology(const Trace& t, V2 size) {
  TopoLayout L;
  L.size = size;
  const size_t n = t.nodes.size();
  L.node_rect.assign(n, Rect());
  if (n == 0) return L;
  Builder b(t, &L);

  int machines = 0;
  std::vector<int> fabric_leaf, fabric_spine;
  for (size_t i = 0; i < n; ++i) {
    const Node& node = t.nodes[i];
    if (is_fabric(node)) {
      (node.name.find("spine") != std::string::npos ? fabric_spine : fabric_leaf).push_back(static_cast<int>(i));
    } else {
      machines = std::max(machines, node.machine + 1);
    }
  }
  const bool has_fabric = !fabric_leaf.empty() || !fabric_spine.empty();
  const float W = size.x, H = size.y;

  // Grid of machine boxes.
  int rows = 1, cols = std::max(1, machines);
  if (machines > 4) {
    rows = (machines + 3) / 4;
    cols = (machines + rows - 1) / rows;
    if (rows > 4) {
      cols = static_cast<int>(std::ceil(std::sqrt(machines * 1.5)));
      rows = (machines + cols - 1) / cols;
    }
  }
  const int rows_above = machines == 0 ? 0 : rows == 1 ? 1 : (rows + 1) / 2;
  const int fabric_rows = (fabric_leaf.empty() ? 0 : 1) + (fabric_spine.empty() ? 0 : 1);
  float band_h = 0;
  if (has_fabric) band_h = std::min(150.0f, std::max(fabric_rows * 44.0f, H * 0.16f));
  if (machines == 0) band_h = H - 2 * kMargin;
  const int gaps = (rows > 0 ? rows - 1 : 0) + (has_fabric && machines > 0 ? 1 : 0);
  const float box_h = machines == 0 ? 0 : (H - 2 * kMargin - band_h - gaps * kBoxGap) / rows;
  const float box_w = (W - 2 * kMargin - (cols - 1) * kBoxGap) / cols;

  float y = kMargin;
  std::vector<float> row_y(rows);
  for (int r = 0; r < rows; ++r) {
    if (r == rows_above && has_fabric) {
      L.fabric = Rect(kMargin, y, W - kMargin, y + band_h);
      y += band_h + kBoxGap;
    }
    row_y[r] = y;
    y += box_h + kBoxGap;
  }
  if (has_fabric && rows_above >= rows) L.fabric = Rect(kMargin, y, W - kMargin, y + band_h);
  if (machines == 0) L.fabric = Rect(kMargin, kMargin, W - kMargin, H - kMargin);

  // Machine contents.
  std::vector<std::vector<int>> members(machines);
  for (size_t i = 0; i < n; ++i)
    if (!is_fabric(t.nodes[i])) members[t.nodes[i].machine].push_back(static_cast<int>(i));
  for (int m = 0; m < machines; ++m) {
    const int r = m / cols, c = m % cols;
    const int in_row = std::min(cols, machines - r * cols);
    const float x0 = kMargin + (cols - in_row) * (box_w + kBoxGap) * 0.5f + c * (box_w + kBoxGap);
    MachineBox box;
    box.machine = m;
    box.rect = Rect(x0, row_y[r], x0 + box_w, row_y[r] + box_h);
    box.mirrored = has_fabric && r >= rows_above;
    L.machines.push_back(box);

    std::vector<int> by_row[kRowCount];
    for (int node : members[m]) by_row[row_of(t.nodes[node])].push_back(node);
    for (auto& v : by_row)
      std::stable_sort(v.begin(), v.end(), [&](int a, int bb) { return t.nodes[a].dev < t.nodes[bb].dev; });
    std::vector<int> present;
    for (int k = 0; k < kRowCount; ++k)
      if (!by_row[k].empty()) present.push_back(k);
    if (box.mirrored) std::reverse(present.begin(), present.end());
    const float lo = box.rect.x0 + kPad, hi = box.rect.x1 - kPad;
    const float top = box.rect.y0 + (box.mirrored ? kPad : kHeader);
    const float bottom = box.rect.y1 - (box.mirrored ? kHeader : kPad);
    const float row_h = present.empty() ? 0 : (bottom - top) / present.size();

    b.place_row(by_row[kRowGpu], kRowGpu, lo, hi, true);
    b.place_row(by_row[kRowNvs], kRowNvs, lo, hi, true);
    // One NVSwitch node (the machine's chips as one crossbar, as traces draw them): a bar over the
    // whole GPU row, so that every GPU's links to it run straight up (link_segment).
    if (by_row[kRowNvs].size() == 1 && by_row[kRowGpu].size() > 1) {
      float x0 = hi, x1 = lo;
      for (int g : by_row[kRowGpu]) {
        x0 = std::min(x0, b.cx[g] - b.width[g] * 0.5f);
        x1 = std::max(x1, b.cx[g] + b.width[g] * 0.5f);
      }
      const int sw = by_row[kRowNvs][0];
      if (x1 - x0 > b.width[sw]) {
        b.cx[sw] = (x0 + x1) * 0.5f;
        b.width[sw] = x1 - x0;
      }
    }
    // PCIe switches under their GPUs (nested switches under their children: a few passes).
    std::vector<int> pci = by_row[kRowPci];
    {
      std::vector<Item> items;
      const float slot = pci.empty() ? 0 : (hi - lo) / pci.size();
      const float w = std::min(max_width(kRowPci), slot * 0.86f);
      std::vector<float> want(n, -1);
      for (int pass = 0; pass < 4; ++pass) {
        for (int p : pci) {
          float x;
          if (b.barycentre(p, &x)) {
            want[p] = x;
            b.cx[p] = x;
            b.placed[p] = 1;
          }
        }
      }
      for (size_t i = 0; i < pci.size(); ++i)
        items.push_back({pci[i], want[pci[i]] >= 0 ? want[pci[i]] : lo + (i + 0.5f) * slot, w});
      resolve_row(&items, lo, hi, &b.cx);
      for (const Item& it : items) {
        b.width[it.node] = it.w;
        b.placed[it.node] = 1;
      }
    }
    b.place_row(by_row[kRowCpu], kRowCpu, lo, hi, false);
    b.place_row(by_row[kRowNic], kRowNic, lo, hi, false);
    b.place_row(by_row[kRowNet], kRowNet, lo, hi, false);
    b.place_row(by_row[kRowOther], kRowOther, lo, hi, true);

    for (size_t k = 0; k < present.size(); ++k) {
      const RowKind kind = static_cast<RowKind>(present[k]);
      const float rh = std::min(max_height(kind), row_h * 0.62f);
      const float cy = top + (k + 0.5f) * row_h;
      for (int node : by_row[kind])
        L.node_rect[node] = Rect(b.cx[node] - b.width[node] * 0.5f, cy - rh * 0.5f, b.cx[node] + b.width[node] * 0.5f,
                                 cy + rh * 0.5f);
    }
  }

  // The network band: leaves (nearer the machines above it), then the spine.
  if (has_fabric) {
    const Rect& f = L.fabric;
    const float lo = f.x0 + kPad, hi = f.x1 - kPad;
    std::vector<std::vector<int>*> band_rows;
    if (!fabric_leaf.empty()) band_rows.push_back(&fabric_leaf);
    if (!fabric_spine.empty()) band_rows.push_back(&fabric_spine);
    auto by_name = [&](int a, int bb) { return t.nodes[a].name < t.nodes[bb].name; };
    std::sort(fabric_leaf.begin(), fabric_leaf.end(), by_name);
    std::sort(fabric_spine.begin(), fabric_spine.end(), by_name);
    // Leaves: ordered by where their ports are (barycentre), then spread evenly over the band.
    b.place_row(fabric_leaf, kRowOther, lo, hi, machines == 0);
    if (fabric_leaf.size() > 1) {
      std::vector<int> order = fabric_leaf;
      std::stable_sort(order.begin(), order.end(), [&](int a, int bb) { return b.cx[a] < b.cx[bb]; });
      const float slot = (hi - lo) / order.size();
      const float w = std::min(max_width(kRowOther) + 24, slot * 0.86f);
      for (size_t i = 0; i < order.size(); ++i) {
        b.cx[order[i]] = lo + (i + 0.5f) * slot;
        b.width[order[i]] = w;
      }
    }
    b.place_row(fabric_spine, kRowNvs, lo, hi, fabric_leaf.empty() && machines == 0);
    const float row_h = (f.h() - 2 * kPad) / band_rows.size();
    for (size_t k = 0; k < band_rows.size(); ++k) {
      const float rh = std::min(24.0f, row_h * 0.6f);
      const float cy = f.y0 + kPad + (k + 0.5f) * row_h;
      for (int node : *band_rows[k])
        L.node_rect[node] = Rect(b.cx[node] - b.width[node] * 0.5f, cy - rh * 0.5f, b.cx[node] + b.width[node] * 0.5f,
                                 cy + rh * 0.5f);
    }
  }
  return L;
}

float link_offset(float thickness) { return thickness * 0.5f + 1.0f; }

bool link_segment(const TopoLayout& layout, const Link& link, float offset, Segment* out) {
  const int n = static_cast<int>(layout.node_rect.size());
  if (link.from < 0 || link.to < 0 || link.from >= n || link.to >= n) return false;
  const Rect& ra = layout.node_rect[link.from];
  const Rect& rb = layout.node_rect[link.to];
  if (ra.empty() || rb.empty()) return false;
  V2 ca = ra.center(), cb = rb.center();
  // A box much wider than the other one (an NVSwitch bar over a row of GPUs) is reached straight
  // above or below the narrow one when it spans it: the line leaves the bar at the narrow box's x.
  auto spans = [](const Rect& wide, const Rect& narrow) {
    const float x = narrow.center().x;
    return wide.w() >= 2.5f * narrow.w() && x >= wide.x0 && x <= wide.x1 &&
           (narrow.y0 >= wide.y1 || narrow.y1 <= wide.y0);
  };
  if (spans(rb, ra)) cb.x = ca.x;
  else if (spans(ra, rb)) ca.x = cb.x;
  const V2 d = cb - ca;
  const float len = length(d);
  if (!(len > 0)) return false;
  auto exit_param = [&](const Rect& r) {
    const float hx = r.w() * 0.5f, hy = r.h() * 0.5f;
    const float tx = std::fabs(d.x) > 1e-6f ? hx / std::fabs(d.x) : 1e9f;
    const float ty = std::fabs(d.y) > 1e-6f ? hy / std::fabs(d.y) : 1e9f;
    return std::min(tx, ty);
  };
  float ta = exit_param(ra), tb = exit_param(rb);
  if (ta + tb >= 1) ta = tb = 0;
  const V2 normal(-d.y / len, d.x / len);  // right of the direction of travel (y grows downwards)
  out->a = ca + d * ta + normal * offset;
  out->b = cb - d * tb + normal * offset;
  return true;
}

V2 point_along(const std::vector<Segment>& path, float f) {
  if (path.empty()) return V2();
  f = std::min(1.0f, std::max(0.0f, f));
  float total = 0;
  for (const Segment& s : path) total += length(s.b - s.a);
  if (!(total > 0)) return path.front().a;
  float left = f * total;
  for (const Segment& s : path) {
    const float l = length(s.b - s.a);
    if (left <= l) return l > 0 ? lerp(s.a, s.b, left / l) : s.a;
    left -= l;
  }
  return path.back().b;
}

bool chunk_position(const Trace& t, const TopoLayout& layout, const trace::Event& e, double time_us, V2* out) {
  if (e.route < 0 || e.route >= static_cast<int>(t.routes.size())) return false;
  std::vector<Segment> path;
  for (int l : t.routes[e.route].links) {
    if (l < 0 || l >= static_cast<int>(t.links.size())) continue;
    Segment s;
    if (link_segment(layout, t.links[l], link_offset(link_thickness(t.links[l].gbs)), &s)) path.push_back(s);
  }
  if (path.empty()) return false;
  const double span = e.end_us - e.data_us;
  const double f = span > 0 ? (time_us - e.data_us) / span : 1.0;
  *out = point_along(path, static_cast<float>(f));
  return true;
}

std::vector<V2> ring_positions(int n, const Rect& r) {
  std::vector<V2> out;
  if (n <= 0) return out;
  const V2 c = r.center();
  const float radius = std::max(4.0f, std::min(r.w(), r.h()) * 0.5f - 14.0f);
  for (int i = 0; i < n; ++i) {
    const double a = -kPi / 2 + 2 * kPi * i / n;
    out.emplace_back(c.x + radius * static_cast<float>(std::cos(a)), c.y + radius * static_cast<float>(std::sin(a)));
  }
  return out;
}

std::vector<V2> tree_positions(const std::vector<int>& parent, const Rect& r) {
  const int n = static_cast<int>(parent.size());
  std::vector<V2> pos(n);
  if (n == 0) return pos;
  std::vector<std::vector<int>> children(n);
  std::vector<int> roots;
  for (int i = 0; i < n; ++i) {
    const int p = parent[i];
    if (p == -1) roots.push_back(i);
    else if (p >= 0 && p < n && p != i) children[p].push_back(i);
  }
  std::vector<int> depth(n, -1);
  std::vector<float> slot(n, 0);
  int leaves = 0, max_depth = 0;
  std::function<float(int, int)> visit = [&](int v, int d) -> float {
    depth[v] = d;
    max_depth = std::max(max_depth, d);
    float sum = 0;
    int k = 0;
    for (int c : children[v]) {
      if (depth[c] >= 0) continue;  // a cycle
      sum += visit(c, d + 1);
      ++k;
    }
    slot[v] = k ? sum / k : static_cast<float>(leaves++);
    return slot[v];
  };
  for (int root : roots) visit(root, 0);
  std::vector<int> stray;
  for (int i = 0; i < n; ++i)
    if (depth[i] < 0) stray.push_back(i);
  const int levels = max_depth + 1 + (stray.empty() ? 0 : 1);
  for (int s : stray) {
    depth[s] = max_depth + 1;
    slot[s] = static_cast<float>(leaves++);
  }
  const float dx = r.w() / std::max(1, leaves), dy = r.h() / levels;
  for (int i = 0; i < n; ++i) pos[i] = V2(r.x0 + (slot[i] + 0.5f) * dx, r.y0 + (depth[i] + 0.5f) * dy);
  return pos;
}

}  // namespace viz
}  // namespace cclab

// viz/view_channels.cc - the channels view: each channel's ring (ranks on a circle, arrows in ring
// order) or tree, ranks coloured by what they do at the cursor, and a table of every rank's step and
// what it waits for on the selected channel.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "viz/app.h"
#include "viz/colors.h"
#include "viz/draw_util.h"

namespace cclab {
namespace viz {
namespace {

constexpr float kTableWidth = 470;

Color state_color(RankStatus::State s) {
  switch (s) {
    case RankStatus::kNotStarted: return rgba(62, 66, 78);
    case RankStatus::kWaitingData: return rgba(230, 165, 40);
    case RankStatus::kWaitingCredits: return rgba(175, 110, 235);
    case RankStatus::kWaiting: return rgba(200, 200, 90);
    case RankStatus::kMoving: return rgba(60, 200, 110);
    case RankStatus::kIdle: return rgba(95, 108, 130);
    case RankStatus::kDone: return rgba(40, 82, 58);
  }
  return rgba(62, 66, 78);
}

const char* state_name(RankStatus::State s) {
  switch (s) {
    case RankStatus::kNotStarted: return "not started";
    case RankStatus::kWaitingData: return "waiting for data";
    case RankStatus::kWaitingCredits: return "waiting for credits";
    case RankStatus::kWaiting: return "waiting";
    case RankStatus::kMoving: return "moving data";
    case RankStatus::kIdle: return "between steps";
    case RankStatus::kDone: return "done";
  }
  return "";
}

// Whether the trace's current op runs a tree (auto mode).
bool tree_mode(const VizState* s) {
  if (s->channel_mode == 1) return false;
  if (s->channel_mode == 2) return true;
  const trace::Trace& t = s->trace();
  if (s->current_op < 0) return false;
  const std::string& a = t.ops[s->current_op].algo;
  return a.find("Tree") != std::string::npos || a.find("tree") != std::string::npos;
}

// The current op's PAT direction (auto mode): +1 reduce_scatter (rank -> rank + 2^d), -1 all_gather
// (rank -> rank - 2^d), 0 not a PAT op.
int pat_direction(const VizState* s) {
  if (s->channel_mode != 0 || s->current_op < 0) return 0;
  const trace::Op& op = s->trace().ops[s->current_op];
  if (op.algo != "PAT") return 0;
  return op.coll == CollKind::kReduceScatter ? 1 : -1;
}

// Pairs (from, to) with a chunk in flight on channel c.
std::set<std::pair<int, int>> active_edges(const VizState* s, int c) {
  std::set<std::pair<int, int>> out;
  const trace::Trace& t = s->trace();
  for (int ev : s->in_flight) {
    const trace::Event& e = t.events[ev];
    if (e.channel == c && e.send_peer >= 0) out.insert({e.rank, e.send_peer});
  }
  return out;
}

void draw_rank(ImDrawList* dl, V2 p, float r, int rank, const RankStatus& st, bool hovered_rank) {
  const Color fill = state_color(st.state);
  dl->AddCircleFilled(iv(p), r, fill, 24);
  dl->AddCircle(iv(p), r, hovered_rank ? kCursor : mix(fill, kText, 0.5f), 24, hovered_rank ? 2.0f : 1.0f);
  const std::string label = std::to_string(rank);
  if (ImGui::CalcTextSize(label.c_str()).x < 2 * r + 4) text_centered(dl, iv(p), rgba(15, 16, 20), label.c_str());
}

struct Cell {
  int channel;
  Rect rect;
};

}  // namespace

void draw_channels_view(VizState* s) {
  const trace::Trace& t = s->trace();
  const int nranks = std::max(t.meta.nranks, s->index.nranks());
  int nch = std::max<int>(static_cast<int>(t.channels.size()), s->index.nchannels());
  if (nch == 0 || nranks == 0) {
    ImGui::TextDisabled(s->live ? "waiting for the run's channels..." : "this trace has no channels and no events");
    return;
  }
  const bool tree = tree_mode(s);
  ImGui::SetNextItemWidth(150);
  const char* modes[] = {"auto (current op)", "ring", "tree"};
  ImGui::Combo("show", &s->channel_mode, modes, 3);
  ImGui::SameLine();
  ImGui::Checkbox("selected channel only", &s->channel_focus);
  ImGui::SameLine();
  ImGui::TextDisabled(tree ? "showing trees" : pat_direction(s) != 0 ? "showing PAT's peers" : "showing rings");
  ImGui::SameLine();
  help_marker(
      "One cell per channel. Ring: ranks on a circle in ring order, an arrow from each rank to the next; "
      "the arrow is bright (thick, the channel's colour) while a chunk moves on it at the cursor, dim "
      "otherwise. Tree: parents above children. PAT: ranks in rank order, an arrow to each rank 2^d away "
      "(all_gather: rank - 2^d, reduce_scatter: rank + 2^d). Rank colours say what the rank does at the cursor. Click a "
      "cell to list its ranks on the right: the step each is at (the last step it began) and what it "
      "waits for: data from its receive peer (that peer has not posted the matching send yet) or credits "
      "from its send peer (a free slot in the peer's FIFO).");
  for (RankStatus::State st : {RankStatus::kWaitingData, RankStatus::kWaitingCredits, RankStatus::kMoving,
                               RankStatus::kIdle, RankStatus::kDone, RankStatus::kNotStarted}) {
    ImGui::SameLine();
    swatch(state_color(st), state_name(st));
  }

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float grid_w = std::max(200.0f, avail.x - kTableWidth - 8), grid_h = std::max(150.0f, avail.y);
  // Grid of cells, as square as the area allows (one cell: the selected channel only).
  s->detail_channel = std::max(0, std::min(s->detail_channel, nch - 1));
  const int shown = s->channel_focus ? 1 : nch;
  int cols = 1;
  float best = 0;
  for (int c = 1; c <= shown; ++c) {
    const int rows = (shown + c - 1) / c;
    const float side = std::min(grid_w / c, grid_h / rows);
    if (side > best) {
      best = side;
      cols = c;
    }
  }
  const int rows = (shown + cols - 1) / cols;
  const float cw = grid_w / cols, ch = grid_h / rows;

  ImGui::BeginChild("chan_grid", ImVec2(grid_w, grid_h), false, ImGuiWindowFlags_NoScrollbar);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##cells", ImVec2(grid_w, grid_h));
  const bool hovered = ImGui::IsItemHovered() && s->interactive;
  const bool clicked = ImGui::IsItemClicked();
  const V2 mouse = v2(ImGui::GetIO().MousePos);
  int tip_rank = -1, tip_channel = -1;
  for (int k = 0; k < shown; ++k) {
    const int c = s->channel_focus ? s->detail_channel : k;
    const Rect cell(o.x + (k % cols) * cw + 3, o.y + (k / cols) * ch + 3, o.x + (k % cols + 1) * cw - 3,
                    o.y + (k / cols + 1) * ch - 3);
    const bool selected = c == s->detail_channel;
    if (clicked && cell.contains(mouse)) s->detail_channel = c;
    dl->AddRectFilled(ImVec2(cell.x0, cell.y0), ImVec2(cell.x1, cell.y1), kPanel, 5);
    dl->AddRect(ImVec2(cell.x0, cell.y0), ImVec2(cell.x1, cell.y1), selected ? channel_color(c) : kGrid, 5, 0,
                selected ? 2.0f : 1.0f);
    const trace::Channel* chan = c < static_cast<int>(t.channels.size()) ? &t.channels[c] : nullptr;
    const bool has_tree = chan && !chan->tree_up.empty();
    const bool show_tree = tree && has_tree;
    const int pat = show_tree ? 0 : pat_direction(s);
    const std::string title = printf_str("channel %d  %s", c, show_tree ? "tree" : pat != 0 ? "PAT" : "ring");
    dl->AddText(ImVec2(cell.x0 + 6, cell.y0 + 4), channel_color(c), title.c_str());
    if (show_tree) {
      const std::string sub = printf_str("tree %d", chan->tree_index);
      dl->AddText(ImVec2(cell.x1 - ImGui::CalcTextSize(sub.c_str()).x - 6, cell.y0 + 4), kTextDim, sub.c_str());
    }
    const Rect area(cell.x0 + 8, cell.y0 + 8 + ImGui::GetTextLineHeight(), cell.x1 - 8, cell.y1 - 8);
    std::vector<int> order;
    std::vector<V2> pos(nranks);
    std::vector<char> placed(nranks, 0);
    if (show_tree) {
      std::vector<int> parent = chan->tree_up;
      parent.resize(nranks, -2);
      const std::vector<V2> p = tree_positions(parent, area);
      for (int r = 0; r < nranks; ++r) {
        pos[r] = p[r];
        placed[r] = 1;
      }
    } else {
      // PAT: ranks in rank order, so that its peers 2^d away are chords of the circle.
      order = chan && !chan->ring.empty() && pat == 0 ? chan->ring : std::vector<int>();
      if (order.empty())
        for (int r = 0; r < nranks; ++r) order.push_back(r);
      const std::vector<V2> p = ring_positions(static_cast<int>(order.size()), area);
      for (size_t i = 0; i < order.size(); ++i)
        if (order[i] >= 0 && order[i] < nranks) {
          pos[order[i]] = p[i];
          placed[order[i]] = 1;
        }
    }
    // Circles as large as the closest two ranks allow.
    float spacing = 1e9f;
    if (nranks <= 256) {
      for (int a = 0; a < nranks; ++a)
        for (int b = a + 1; b < nranks; ++b)
          if (placed[a] && placed[b]) spacing = std::min(spacing, length(pos[a] - pos[b]));
    } else {
      spacing = std::sqrt(area.w() * area.h() / nranks);
    }
    const float radius = std::max(4.0f, std::min(17.0f, spacing * 0.3f));
    const auto active = active_edges(s, c);
    const Color bright = channel_color(c), faint = mix(channel_color(c), kPanel, 0.42f);
    auto edge = [&](int a, int b) {
      if (a < 0 || b < 0 || a >= nranks || b >= nranks || !placed[a] || !placed[b] || a == b) return;
      const bool on = active.count({a, b}) > 0;
      const V2 d = pos[b] - pos[a];
      const float len = length(d);
      if (len < 2 * radius + 2) return;
      const V2 u = d * (1.0f / len);
      const V2 pa = pos[a] + u * (radius + 2), pb = pos[b] - u * (radius + 2);
      const float th = on ? 4.0f : 2.5f;
      const Color col = on ? bright : faint;
      draw_arrow(dl, iv(pa), iv(pb), col, th, std::min(10.0f, radius));
      s->drawn.arrows.push_back({c, a, b, pa, pb, th, col, on});
    };
    if (show_tree) {
      for (int r = 0; r < nranks && r < static_cast<int>(chan->tree_up.size()); ++r) {
        const int p = chan->tree_up[r];
        if (p < 0) continue;
        // Reduce goes up (child -> parent), broadcast down: draw the direction that moves now (up by default).
        if (active.count({p, r}) && !active.count({r, p})) edge(p, r);
        else edge(r, p);
      }
    } else if (pat != 0) {
      // Every rank's link along each dimension d: to rank - 2^d (all_gather) or rank + 2^d (reduce_scatter).
      for (int dist = 1; dist < nranks; dist *= 2)
        for (int r = 0; r < nranks; ++r) edge(r, ((r + pat * dist) % nranks + nranks) % nranks);
    } else {
      for (size_t i = 0; i < order.size() && order.size() > 1; ++i) edge(order[i], order[(i + 1) % order.size()]);
    }
    for (int r = 0; r < nranks; ++r) {
      if (!placed[r]) continue;
      const RankStatus st = rank_status(t, s->index, s->match, r, c, s->tl.t);
      const bool h = hovered && length(mouse - pos[r]) <= radius + 2;
      if (h) {
        tip_rank = r;
        tip_channel = c;
      }
      draw_rank(dl, pos[r], radius, r, st, h);
    }
  }
  if (tip_rank >= 0) {
    const RankStatus st = rank_status(t, s->index, s->match, tip_rank, tip_channel, s->tl.t);
    ImGui::BeginTooltip();
    ImGui::Text("rank %d, channel %d", tip_rank, tip_channel);
    if (st.event >= 0) {
      const trace::Event& e = t.events[st.event];
      ImGui::Text("step %llu: %s", static_cast<unsigned long long>(e.step), trace::prim_label(e.prim));
    }
    ImGui::TextUnformatted(st.text(t).c_str());
    ImGui::EndTooltip();
  }
  ImGui::EndChild();

  // The selected channel's ranks.
  ImGui::SameLine();
  ImGui::BeginChild("chan_table", ImVec2(kTableWidth, grid_h), false);
  const int c = s->detail_channel;
  ImGui::TextColored(ImVec4(red_of(channel_color(c)) / 255.0f, green_of(channel_color(c)) / 255.0f,
                            blue_of(channel_color(c)) / 255.0f, 1),
                     "channel %d at %s", c, format_time(s->tl.t).c_str());
  const ImGuiTableFlags tf = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                             ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("ranks", 4, tf)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("rank");
    ImGui::TableSetupColumn("step");
    ImGui::TableSetupColumn("primitive");
    ImGui::TableSetupColumn("doing / waiting for", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    const trace::Channel* chan = c < static_cast<int>(t.channels.size()) ? &t.channels[c] : nullptr;
    std::vector<int> order = chan && !chan->ring.empty() && !tree ? chan->ring : std::vector<int>();
    if (order.empty())
      for (int r = 0; r < nranks; ++r) order.push_back(r);
    for (int r : order) {
      const RankStatus st = rank_status(t, s->index, s->match, r, c, s->tl.t);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", r);
      ImGui::TableNextColumn();
      if (st.event >= 0) ImGui::Text("%llu", static_cast<unsigned long long>(st.step));
      else ImGui::TextDisabled("-");
      ImGui::TableNextColumn();
      if (st.event >= 0) ImGui::TextUnformatted(trace::prim_label(t.events[st.event].prim));
      ImGui::TableNextColumn();
      const Color sc = state_color(st.state);
      ImGui::TextColored(ImVec4(std::max(0.45f, red_of(sc) / 255.0f), std::max(0.45f, green_of(sc) / 255.0f),
                                std::max(0.45f, blue_of(sc) / 255.0f), 1),
                         "%s", st.text(t).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

}  // namespace viz
}  // namespace cclab

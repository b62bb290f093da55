// viz/view_timeline.cc - the timeline view: the collectives, a Gantt chart of every rank's steps per
// channel (waiting part dim, data-moving part bright, channel colours) and the step log: the events
// around the cursor.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "viz/app.h"
#include "viz/colors.h"
#include "viz/draw_util.h"

namespace cclab {
namespace viz {
namespace {

constexpr float kRowLabel = 70;

void ops_table(VizState* s, float height) {
  const trace::Trace& t = s->trace();
  const int n = std::max(t.meta.nranks, s->index.nranks());
  const ImGuiTableFlags tf = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                             ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("ops", 10, tf, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const char* h : {"#", "collective", "algo", "proto", "size", "ranks", "channels", "begin", "time", "algbw / busbw (GB/s)"})
    ImGui::TableSetupColumn(h, std::string(h) == "algbw / busbw (GB/s)" ? ImGuiTableColumnFlags_WidthStretch : 0);
  ImGui::TableHeadersRow();
  ImGuiListClipper clip;
  clip.Begin(static_cast<int>(t.ops.size()));
  while (clip.Step()) {
    for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
      const trace::Op& o = t.ops[i];
      const OpBandwidth bw = op_bandwidth(o, n);
      ImGui::TableNextRow();
      if (i == s->current_op) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, rgba(48, 70, 105));
      ImGui::TableNextColumn();
      if (ImGui::Selectable(printf_str("%d##op%d", i + 1, i).c_str(), false, ImGuiSelectableFlags_SpanAllColumns))
        s->tl.seek(o.begin_us);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(trace::coll_name(o.coll));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(o.algo.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(o.proto.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_bytes(static_cast<double>(o.bytes)).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%d", n);
      ImGui::TableNextColumn();
      ImGui::Text("%d", o.nchannels);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_time(o.begin_us).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_time(bw.time_us).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%8.2f / %8.2f", bw.algbw, bw.busbw);
    }
  }
  ImGui::EndTable();
}

void gantt(VizState* s, float width, float height) {
  const trace::Trace& t = s->trace();
  const std::vector<EventRow>& rows = s->index.rows();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##gantt", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered() && s->interactive;
  const float axis_h = ImGui::GetTextLineHeight() + 8;
  const float x0 = p.x + kRowLabel, x1 = p.x + width, y0 = p.y, y1 = p.y + height - axis_h;
  if (rows.empty() || !(x1 > x0 + 10)) return;
  const double span = std::max(1e-9, s->tl.end - s->tl.begin);
  const double vis = span * s->gantt_zoom;
  double v0 = s->tl.t - vis * 0.5, v1 = v0 + vis;
  if (v0 < s->tl.begin) {
    v0 = s->tl.begin;
    v1 = v0 + vis;
  }
  if (v1 > s->tl.end) {
    v1 = s->tl.end;
    v0 = std::max(s->tl.begin, v1 - vis);
  }
  if (!(v1 > v0)) v1 = v0 + 1e-3;
  // Display rows: one per (rank, channel); when they do not fit at 2 px each, one per rank with its
  // channels drawn over each other.
  std::vector<std::vector<int>> lines;
  std::vector<int> line_rank;
  const bool per_rank = rows.size() * 2.0f > (y1 - y0);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!per_rank || lines.empty() || line_rank.back() != rows[r].rank) {
      lines.emplace_back();
      line_rank.push_back(rows[r].rank);
    }
    lines.back().push_back(static_cast<int>(r));
  }
  const float row_h = std::min(16.0f, (y1 - y0) / lines.size());
  auto x_of = [&](double v) { return x0 + static_cast<float>((v - v0) / (v1 - v0)) * (x1 - x0); };
  const float rows_end = std::min(y1, y0 + row_h * lines.size());
  dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, rows_end), kPanel);
  dl->PushClipRect(ImVec2(x0, y0), ImVec2(x1, rows_end), true);
  for (size_t li = 0; li < lines.size(); ++li) {
    const float ya = y0 + li * row_h;
    const float yb = ya + std::max(0.5f, row_h - (row_h >= 4 ? 1 : 0));
    for (int r : lines[li]) {
      const EventRow& row = rows[r];
      const Color bright = channel_color(row.channel), faint = mix(channel_color(row.channel), kPanel, 0.3f);
      // First event that may reach into the window: max_end is non-decreasing.
      auto it = std::lower_bound(row.max_end.begin(), row.max_end.end(), v0);
      float last_px = -1e9f;
      for (size_t k = static_cast<size_t>(it - row.max_end.begin()); k < row.events.size(); ++k) {
        const trace::Event& e = t.events[row.events[k]];
        if (e.begin_us > v1) break;
        const float xa = x_of(e.begin_us), xd = x_of(e.data_us), xe = std::max(x_of(e.end_us), xd + 1);
        if (xe < last_px + 0.5f) continue;  // sub-pixel: already covered
        if (xd > xa + 0.5f && row_h >= 3)
          dl->AddRectFilled(ImVec2(xa, ya + row_h * 0.3f), ImVec2(xd, yb - row_h * 0.3f), faint);
        // A pixel of gap at the end of steps wide enough to keep back-to-back steps apart.
        dl->AddRectFilled(ImVec2(xd, ya), ImVec2(xe - (xe - xa >= 4 ? 1.0f : 0.0f), yb), bright);
        last_px = xe;
      }
    }
  }
  const float cx = x_of(s->tl.t);
  dl->AddLine(ImVec2(cx, y0), ImVec2(cx, rows_end), kCursor, 2);
  dl->PopClipRect();
  // Row labels: rank and channel where they fit, ranks only otherwise (where there is room).
  const float lh = ImGui::GetTextLineHeight();
  int last_rank = -1;
  float last_label_y = -1e9f;
  for (size_t li = 0; li < lines.size(); ++li) {
    const float ya = y0 + li * row_h;
    if (ya + lh > y1 + 1) break;
    const EventRow& first = rows[lines[li].front()];
    if (row_h >= lh && !per_rank) {
      dl->AddText(ImVec2(p.x, ya + (row_h - lh) * 0.5f), kTextDim, printf_str("r%d c%d", first.rank, first.channel).c_str());
    } else if (row_h >= lh) {
      dl->AddText(ImVec2(p.x, ya + (row_h - lh) * 0.5f), kTextDim, printf_str("rank %d", first.rank).c_str());
    } else if (first.rank != last_rank) {
      if (ya - last_label_y >= lh) {
        dl->AddText(ImVec2(p.x, ya), kTextDim, printf_str("rank %d", first.rank).c_str());
        last_label_y = ya;
        dl->AddLine(ImVec2(x0 - 4, ya), ImVec2(x0, ya), kGrid);
      }
    }
    last_rank = first.rank;
  }
  if (per_rank) dl->AddText(ImVec2(p.x, rows_end + 5), kTextDim, "per rank");
  draw_time_axis(dl, x0, x1, rows_end + 2, v0, v1);
  if (hovered) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    const int li = static_cast<int>((m.y - y0) / row_h);
    if (m.x >= x0 && li >= 0 && li < static_cast<int>(lines.size())) {
      const double at = v0 + (m.x - x0) / (x1 - x0) * (v1 - v0);
      for (int r : lines[li]) {
        const int ev = s->index.last_begun(t, r, at);
        if (ev < 0 || t.events[ev].end_us < at) continue;
        const trace::Event& e = t.events[ev];
        ImGui::SetTooltip("rank %d channel %d step %llu: %s\nbegin %s, data %s, end %s\n%s at offset %llu", e.rank,
                          e.channel, static_cast<unsigned long long>(e.step), trace::prim_label(e.prim),
                          format_time(e.begin_us).c_str(), format_time(e.data_us).c_str(),
                          format_time(e.end_us).c_str(), format_bytes(static_cast<double>(e.bytes)).c_str(),
                          static_cast<unsigned long long>(e.offset));
        break;
      }
      if (ImGui::IsItemClicked()) s->tl.seek(at);
    }
  }
}

void step_log(VizState* s) {
  const trace::Trace& t = s->trace();
  const std::vector<int>& order = s->index.by_begin();
  ImGui::TextUnformatted("Step log");
  ImGui::SameLine();
  help_marker(
      "The steps that began around the cursor, in begin order (the newest above the cursor is highlighted). "
      "begin: the step started waiting; data: its waits were satisfied and data started to move; end: its "
      "data was posted. offset/bytes say which chunk of the rank's buffer the step moves; step is the FIFO "
      "step on the connection.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("rank", &s->log_rank);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("channel", &s->log_channel);
  s->log_rank = std::max(-1, s->log_rank);
  s->log_channel = std::max(-1, s->log_channel);
  ImGui::SameLine();
  ImGui::TextDisabled("(-1: any)");
  // The window of events: the 10 that began last before the cursor (the newest highlighted), then up
  // to 80 after it, after filtering.
  const size_t at = s->index.lower_bound_begin(t, s->tl.t + 1e-6);
  auto keep = [&](int ev) {
    const trace::Event& e = t.events[ev];
    return (s->log_rank < 0 || e.rank == s->log_rank) && (s->log_channel < 0 || e.channel == s->log_channel);
  };
  std::vector<int> before, after;
  for (size_t k = at; k-- > 0 && before.size() < 10;)
    if (keep(order[k])) before.push_back(order[k]);
  for (size_t k = at; k < order.size() && after.size() < 80; ++k)
    if (keep(order[k])) after.push_back(order[k]);
  std::reverse(before.begin(), before.end());
  const ImGuiTableFlags tf = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                             ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("steplog", 10, tf)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const char* h : {"begin", "data", "end", "rank", "ch", "primitive", "from -> to", "offset", "bytes", "step"})
    ImGui::TableSetupColumn(h);
  ImGui::TableHeadersRow();
  auto row = [&](int ev, bool newest) {
    const trace::Event& e = t.events[ev];
    ImGui::TableNextRow();
    const bool moving = e.data_us <= s->tl.t && s->tl.t < e.end_us;
    if (newest) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, rgba(48, 70, 105));
    else if (moving) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, rgba(34, 62, 46));
    const bool future = e.begin_us > s->tl.t;
    if (future) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_time(e.begin_us).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_time(e.data_us).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_time(e.end_us).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%d", e.rank);
    ImGui::TableNextColumn();
    const Color cc = channel_color(e.channel);
    ImGui::TextColored(ImVec4(red_of(cc) / 255.0f, green_of(cc) / 255.0f, blue_of(cc) / 255.0f, 1), "%d", e.channel);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(trace::prim_label(e.prim));
    ImGui::TableNextColumn();
    const std::string from = e.recv_peer >= 0 ? std::to_string(e.recv_peer) : "-";
    const std::string to = e.send_peer >= 0 ? std::to_string(e.send_peer) : "-";
    ImGui::Text("%s -> %d -> %s", from.c_str(), e.rank, to.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%llu", static_cast<unsigned long long>(e.offset));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_bytes(static_cast<double>(e.bytes)).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%llu", static_cast<unsigned long long>(e.step));
    if (future) ImGui::PopStyleColor();
  };
  for (size_t i = 0; i < before.size(); ++i) row(before[i], i + 1 == before.size());
  for (int ev : after) row(ev, false);
  ImGui::EndTable();
}

}  // namespace

void draw_timeline_view(VizState* s) {
  const trace::Trace& t = s->trace();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float ops_h = std::min(6.5f, static_cast<float>(t.ops.size()) + 1.5f) * ImGui::GetTextLineHeightWithSpacing() + 4;
  if (!t.ops.empty()) ops_table(s, ops_h);
  ImGui::TextUnformatted("Steps per rank and channel");
  ImGui::SameLine();
  help_marker(
      "One row per (rank, channel). Each step is a bar from its begin to its end: thin and dim while it waits "
      "(begin -> data), full height while its data moves (data -> end), in the channel's colour. The window "
      "is centred on the cursor; zoom with the slider, click to move the cursor.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(200);
  float zoom = static_cast<float>(s->gantt_zoom);
  if (ImGui::SliderFloat("visible span", &zoom, 1e-4f, 1.0f, "%.4f", ImGuiSliderFlags_Logarithmic)) s->gantt_zoom = zoom;
  const float rest = ImGui::GetContentRegionAvail().y;
  const float axis_h = ImGui::GetTextLineHeight() + 8;
  const float need = static_cast<float>(s->index.rows().size()) * 16.0f + axis_h;  // rows at their tallest
  const float gantt_h = std::max(std::min(120.0f, need), std::min(need, (rest - 8) * 0.6f));
  gantt(s, avail.x, gantt_h);
  ImGui::Separator();
  step_log(s);
}

}  // namespace viz
}  // namespace cclab

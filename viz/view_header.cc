// viz/view_header.cc - the bar above the views: what the trace is, the transport (play, pause, step,
// scrubber, speed) and the current collective's algbw/busbw.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "viz/app.h"
#include "viz/colors.h"
#include "viz/draw_util.h"

namespace cclab {
namespace viz {
namespace {

constexpr const char* kBwHelp =
    "nccl-tests' definitions (the numbers cclab perf and cclab sim print):\n"
    "  algbw = S / t: the bytes of the collective (the size column: all_reduce, broadcast, reduce: the buffer; "
    "all_gather: the gathered output; reduce_scatter: the input) divided by its time.\n"
    "  busbw = algbw x factor, the rate each rank's links must sustain, comparable across collectives and "
    "rank counts:\n"
    "    all_reduce               2 (n - 1) / n\n"
    "    all_gather, reduce_scatter  (n - 1) / n\n"
    "    broadcast, reduce, send/recv  1\n"
    "  with n ranks and 1 GB = 1e9 bytes. From the trace's OPS section (its own algbw/busbw when recorded, "
    "else bytes / (last step's end - first step's begin)).";

// The scrubber: a track over [begin, end] with each collective as a band, and the cursor; click or
// drag to seek.
void scrubber(VizState* s, float width) {
  const trace::Trace& t = s->trace();
  Timeline& tl = s->tl;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float h = ImGui::GetFrameHeight();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##scrub", ImVec2(width, h));
  const bool active = ImGui::IsItemActive();
  const double span = tl.end - tl.begin;
  auto x_of = [&](double v) { return p.x + (span > 0 ? static_cast<float>((v - tl.begin) / span) : 0.0f) * width; };
  if (active && span > 0) {
    const float mx = std::min(p.x + width, std::max(p.x, ImGui::GetIO().MousePos.x));
    tl.seek(tl.begin + (mx - p.x) / width * span);
  }
  dl->AddRectFilled(p, ImVec2(p.x + width, p.y + h), rgba(34, 38, 48), 3);
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const trace::Op& o = t.ops[i];
    const float xa = x_of(o.begin_us), xb = std::max(x_of(o.end_us), xa + 1);
    const bool cur = static_cast<int>(i) == s->current_op;
    dl->AddRectFilled(ImVec2(xa, p.y + 3), ImVec2(xb, p.y + h - 3), cur ? rgba(70, 100, 150) : rgba(50, 62, 84), 2);
  }
  for (const trace::Stuck& st : t.stuck) {  // the doctor's reports
    const float x = x_of(st.time_us);
    dl->AddLine(ImVec2(x, p.y + 1), ImVec2(x, p.y + h - 1), kStuckWaiting, 2);
  }
  dl->AddRect(p, ImVec2(p.x + width, p.y + h), rgba(60, 65, 80), 3);
  const float cx = x_of(tl.t);
  dl->AddLine(ImVec2(cx, p.y), ImVec2(cx, p.y + h), kCursor, 2);
  dl->AddTriangleFilled(ImVec2(cx - 5, p.y), ImVec2(cx + 5, p.y), ImVec2(cx, p.y + 6), kCursor);
  if (ImGui::IsItemHovered() && span > 0 && s->interactive) {
    const double at = tl.begin + (ImGui::GetIO().MousePos.x - p.x) / width * span;
    ImGui::SetTooltip("%s", format_time(at).c_str());
  }
}

}  // namespace

void draw_header(VizState* s) {
  const trace::Trace& t = s->trace();
  Timeline& tl = s->tl;
  // Line 1: what this is.
  ImGui::TextColored(ImVec4(0.45f, 0.75f, 1.0f, 1.0f), "cclab viz");
  ImGui::SameLine();
  ImGui::TextUnformatted(s->title.c_str());
  if (ImGui::IsItemHovered() && s->interactive && !s->opt.trace_path.empty())
    ImGui::SetTooltip("%s", s->opt.trace_path.c_str());
  if (s->has_trace) {
    ImGui::SameLine();
    const trace::Meta& m = t.meta;
    std::string info = printf_str("%s  |  %d machine%s, %d ranks  |  %s backend, %s clock  |  %zu events, %d channels",
                                  m.topo_name.empty() ? "no topology" : m.topo_name.c_str(), m.machines,
                                  m.machines == 1 ? "" : "s", std::max(m.nranks, s->index.nranks()),
                                  m.backend.empty() ? "?" : m.backend.c_str(), m.clock.empty() ? "?" : m.clock.c_str(),
                                  t.events.size(), std::max<int>(static_cast<int>(t.channels.size()), s->index.nchannels()));
    ImGui::TextDisabled("%s", info.c_str());
  }
  if (s->live) {
    const std::string st = s->live->status();
    const float w = ImGui::CalcTextSize(st.c_str()).x;
    ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowContentRegionMax().x - w));
    const LiveSource::State state = s->live->state();
    const ImVec4 c = state == LiveSource::State::kStreaming  ? ImVec4(1.0f, 0.35f, 0.3f, 1)
                     : state == LiveSource::State::kFailed ? ImVec4(1.0f, 0.6f, 0.2f, 1)
                                                           : ImVec4(0.7f, 0.75f, 0.8f, 1);
    ImGui::TextColored(c, "%s", st.c_str());
  }
  if (!s->has_trace) {
    ImGui::Separator();
    return;
  }

  // Line 2: transport.
  const std::vector<double>* bounds = nullptr;
  auto boundaries = [&]() -> const std::vector<double>& {
    if (!bounds) bounds = &s->index.boundaries(t);
    return *bounds;
  };
  if (ImGui::Button("|<")) tl.seek(tl.begin);
  if (ImGui::IsItemHovered() && s->interactive) ImGui::SetTooltip("to the beginning (Home)");
  ImGui::SameLine();
  if (ImGui::Button(" < ")) tl.step_back(boundaries());
  if (ImGui::IsItemHovered() && s->interactive) ImGui::SetTooltip("previous event boundary (Left)");
  ImGui::SameLine();
  const bool running = tl.playing || (s->live && tl.follow);
  if (ImGui::Button(running ? " Pause ###play" : " Play  ###play")) {
    if (running) tl.pause();
    else tl.play();
  }
  if (ImGui::IsItemHovered() && s->interactive) ImGui::SetTooltip("play / pause (Space)");
  ImGui::SameLine();
  if (ImGui::Button(" > ")) tl.step_forward(boundaries());
  if (ImGui::IsItemHovered() && s->interactive) ImGui::SetTooltip("next event boundary (Right)");
  ImGui::SameLine();
  if (ImGui::Button(">|")) {
    tl.seek(tl.end);
    if (s->live) tl.follow = true;
  }
  if (ImGui::IsItemHovered() && s->interactive)
    ImGui::SetTooltip(s->live ? "to the newest event and follow it (End)" : "to the end (End)");
  ImGui::SameLine();
  const std::string now = "t = " + format_time(tl.t);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(now.c_str());
  ImGui::SameLine(0, 4);
  ImGui::TextDisabled("/ %s", format_time(tl.end).c_str());
  ImGui::SameLine();
  const float speed_w = 230;
  const float avail = ImGui::GetContentRegionAvail().x;
  scrubber(s, std::max(100.0f, avail - speed_w - 8));
  ImGui::SameLine();
  ImGui::TextDisabled("speed");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(speed_w - ImGui::CalcTextSize("speed").x - ImGui::GetStyle().ItemSpacing.x);
  float pos = static_cast<float>(slider_from_speed(tl.speed));
  std::string label = format_time(tl.speed) + " per s";
  for (size_t i = 0; i < label.size(); ++i)
    if (label[i] == '%') label.insert(i++, "%");
  if (ImGui::SliderFloat("##speed", &pos, 0.0f, 1.0f, label.c_str())) tl.speed = speed_from_slider(pos);
  if (ImGui::IsItemHovered() && s->interactive)
    ImGui::SetTooltip("playback speed: trace time per wall-clock second (log scale)");

  // Line 3: the collective at the cursor.
  if (s->current_op >= 0) {
    const trace::Op& o = t.ops[s->current_op];
    const int n = std::max(t.meta.nranks, s->index.nranks());
    const OpBandwidth bw = op_bandwidth(o, n);
    ImGui::TextDisabled("collective %d/%zu", s->current_op + 1, t.ops.size());
    ImGui::SameLine();
    ImGui::TextUnformatted(op_label(o).c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("%d ch, %s .. %s (%s)", o.nchannels, format_time(o.begin_us).c_str(),
                        format_time(o.end_us).c_str(), format_time(bw.time_us).c_str());
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(0.6f, 0.85f, 1.0f, 1), "algbw %.2f GB/s", bw.algbw);
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(0.55f, 1.0f, 0.6f, 1), "busbw %.2f GB/s", bw.busbw);
    ImGui::SameLine();
    help_marker(kBwHelp);
  } else if (s->index.p2p_only()) {
    // ncclSend / ncclRecv groups (lab 1's ring): steps, but no collective to measure.
    ImGui::TextDisabled("no collective in this trace: point-to-point steps only (ncclSend / ncclRecv), in the timeline");
  } else if (!t.events.empty()) {
    ImGui::TextDisabled("no collective completed yet in this trace (its steps are in the timeline)");
  } else {
    ImGui::TextDisabled("no collectives recorded in this trace");
    ImGui::SameLine();
    help_marker(kBwHelp);
  }

  // Line 4: the doctor's verdict (a trace with STUK sections): the report in force at the cursor, else
  // when the first comes.
  if (!t.stuck.empty()) {
    const int at = stuck_at(t, tl.t);
    int last = -1;  // the last report before the cursor (its waits may have ended since)
    for (size_t i = 0; i < t.stuck.size(); ++i)
      if (t.stuck[i].time_us <= tl.t && (last < 0 || t.stuck[i].time_us >= t.stuck[last].time_us))
        last = static_cast<int>(i);
    const trace::Stuck& st = t.stuck[at >= 0 ? at : last >= 0 ? last : 0];
    if (at < 0 && last >= 0) {
      ImGui::TextDisabled("doctor at %s (its waits ended at %s): %s", format_time(st.time_us).c_str(),
                          format_time(stuck_until(t, last)).c_str(), st.summary.c_str());
    } else if (at >= 0) {
      ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.85f, 1), "doctor%s at %s:", st.certain ? " (the operation failed)" : "",
                         format_time(st.time_us).c_str());
      ImGui::SameLine();
      ImGui::TextWrapped("%s", st.summary.c_str());
    } else {
      ImGui::TextDisabled("doctor at %s (ahead of the cursor): %s", format_time(st.time_us).c_str(), st.summary.c_str());
    }
    if (ImGui::IsItemHovered() && s->interactive) {
      ImGui::BeginTooltip();
      for (const std::string& l : st.lines) ImGui::TextUnformatted(l.c_str());
      ImGui::EndTooltip();
    }
  }
}

}  // namespace viz
}  // namespace cclab

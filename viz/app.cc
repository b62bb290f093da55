// viz/app.cc - state setup, per-frame refresh of indexes and caches, the window's frame (header, tabs).
#include "viz/app.h"

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "viz/colors.h"
#include "viz/draw_util.h"

namespace cclab {
namespace viz {

const trace::LinkLoad& VizState::load() const { return use_live_load ? live_load_out : trace().load; }

namespace {
// The cursor where --at puts it (a time, or a percentage of the trace), else at the trace's begin.
void seek_to_at(VizState* s) {
  const VizOptions& o = s->opt;
  if (o.has_at) s->tl.seek(o.at_is_percent ? s->tl.begin + (s->tl.end - s->tl.begin) * o.at_us / 100 : o.at_us);
  else s->tl.seek(s->tl.begin);
}
// Playback speed: --speed, else the whole trace in about 10 s.
void set_speed(VizState* s) {
  s->tl.speed = s->opt.speed > 0 ? s->opt.speed : default_speed(s->tl.end - s->tl.begin);
}
}  // namespace

bool init_state(VizState* s, std::string* error) {
  const VizOptions& o = s->opt;
  for (const std::string& path : o.curves)
    if (!load_curves(path, &s->curves, error)) return false;
  if (!o.trace_path.empty()) {
    if (!trace::read_trace(o.trace_path, &s->file_trace, error)) return false;
    if (s->file_trace.load.bins <= 0 && !s->file_trace.events.empty()) trace::compute_link_load(&s->file_trace);
    s->has_trace = true;
    const size_t slash = o.trace_path.find_last_of('/');
    s->title = slash == std::string::npos ? o.trace_path : o.trace_path.substr(slash + 1);
  } else if (!o.live_socket.empty()) {
    s->live.reset(new LiveSource(o.live_socket, o.live_wait_s));
    s->has_trace = true;
    s->use_live_load = true;
    s->title = "live " + o.live_socket;
    s->tl.follow = true;
  } else {
    s->title = "curves";
  }
  s->view = o.view;
  s->select_view = true;
  s->busiest_n = o.busiest;
  if (o.channel >= 0) {
    s->detail_channel = o.channel;
    s->channel_focus = true;
  }
  const trace::Trace& t = s->trace();
  s->index.update(t);
  s->load_index.build(s->load(), t.links.size());
  const auto span = trace_span(t);
  s->tl.set_range(span.first, span.second);
  s->tl.t = s->tl.begin;
  seek_to_at(s);
  s->tl.follow = s->live != nullptr && !o.has_at;
  set_speed(s);
  return true;
}

void refresh(VizState* s) {
  if (s->live) {
    const bool changed = s->live->poll(s->interactive ? 3 : 0);
    const trace::Trace& t = s->trace();
    if (changed || s->index.indexed() != t.events.size()) {
      s->index.update(t);
      s->live_load.update(t);
      if (s->tl.speed == 1 && t.end_us() > t.begin_us()) s->tl.speed = default_speed(t.end_us() - t.begin_us());
      const auto span = trace_span(t);
      s->tl.set_range(span.first, span.second);
    }
    // The run's own LOAD section once it finished; until then the incremental load (every 100 ms).
    const bool final_load = s->live->state() == LiveSource::State::kComplete && t.load.bins > 0;
    if (final_load && s->use_live_load) {
      s->use_live_load = false;
      s->load_index.build(s->load(), t.links.size());
    } else if (s->use_live_load && s->live_load.events_done() != s->live_load_filled &&
               (s->wall_s - s->last_live_refresh >= 0.1 || !s->interactive)) {
      s->live_load.fill(&s->live_load_out, t.links.size());
      s->load_index.build(s->load(), t.links.size());
      s->live_load_filled = s->live_load.events_done();
      s->last_live_refresh = s->wall_s;
    }
  }
  const trace::Trace& t = s->trace();
  if (s->switches_for != t.links.size()) {  // live: the topology arrives before the events
    s->switches.build(t);
    s->switches_for = t.links.size();
  }
  s->in_flight.clear();
  s->index.in_flight(t, s->tl.t, &s->in_flight);
  if (s->match.built_for() != s->index.indexed()) {
    // Live: at most every 250 ms (it walks every event).
    if (!s->live || s->wall_s - s->last_match_build >= 0.25 || s->live->state() != LiveSource::State::kStreaming) {
      s->match.build(t, s->index);
      s->last_match_build = s->wall_s;
    }
  }
  s->current_op = op_at(t, s->tl.t);
}

bool follow_live_to_end(VizState* s, std::string* error) {
  if (!s->live) return true;
  for (;;) {
    const LiveSource::State st = s->live->state();
    if (st == LiveSource::State::kComplete || st == LiveSource::State::kFailed) break;
    s->wall_s += 0.05;
    refresh(s);  // a screenshot's refresh polls without waiting: pace it
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  refresh(s);  // the last events' index and (not interactive: at once) link load
  if (s->live->state() == LiveSource::State::kFailed && s->trace().events.empty()) {
    *error = s->live->status();
    return false;
  }
  s->tl.follow = false;
  // As for a file: a speed from the whole run (following, it came from the first events that arrived,
  // so two screenshots of one run could show different speeds).
  set_speed(s);
  seek_to_at(s);
  refresh(s);  // what is in flight at the cursor
  return true;
}

namespace {

void handle_keys(VizState* s) {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || !s->interactive) return;
  const trace::Trace& t = s->trace();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) s->tl.toggle();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) s->tl.step_forward(s->index.boundaries(t));
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) s->tl.step_back(s->index.boundaries(t));
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) s->tl.seek(s->tl.begin);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End), false)) s->tl.seek(s->tl.end);
  const View views[] = {View::kTopology, View::kChannels, View::kLinks, View::kTimeline, View::kCurves};
  for (int k = 0; k < 5; ++k) {
    if (ImGui::IsKeyPressed('1' + k, false) && (s->has_trace || views[k] == View::kCurves)) {
      s->view = views[k];
      s->select_view = true;
    }
  }
}

}  // namespace

void draw_frame(VizState* s, float wall_dt) {
  s->wall_s += wall_dt;
  handle_keys(s);
  if (s->interactive) s->tl.advance(wall_dt, s->live != nullptr);
  refresh(s);

  ImGuiIO& io = ImGui::GetIO();
  s->drawn.clear();
  s->drawn.at_us = s->tl.t;
  s->drawn.width = static_cast<int>(io.DisplaySize.x);
  s->drawn.height = static_cast<int>(io.DisplaySize.y);

  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoScrollWithMouse;
  ImGui::Begin("cclab viz", nullptr, flags);
  draw_header(s);

  struct Tab {
    View view;
    const char* label;
    void (*draw)(VizState*);
  };
  const Tab tabs[] = {
      {View::kTopology, "Topology", draw_topology_view}, {View::kChannels, "Channels", draw_channels_view},
      {View::kLinks, "Links", draw_links_view},          {View::kTimeline, "Timeline & steps", draw_timeline_view},
      {View::kCurves, "Curves", draw_curves_view},
  };
  if (ImGui::BeginTabBar("views", ImGuiTabBarFlags_NoTooltip)) {
    const bool selecting = s->select_view;
    for (const Tab& tab : tabs) {
      if (!s->has_trace && tab.view != View::kCurves) continue;
      const ImGuiTabItemFlags f = selecting && s->view == tab.view ? ImGuiTabItemFlags_SetSelected : 0;
      if (ImGui::BeginTabItem(tab.label, nullptr, f)) {
        if (!selecting) s->view = tab.view;
        s->drawn.view = tab.view;
        tab.draw(s);
        ImGui::EndTabItem();
      }
    }
    s->select_view = false;
    ImGui::EndTabBar();
  }
  ImGui::End();
}

void apply_theme() {
  ImGui::StyleColorsDark();
  ImGuiStyle& st = ImGui::GetStyle();
  st.WindowPadding = ImVec2(8, 6);
  st.FramePadding = ImVec2(6, 3);
  st.ItemSpacing = ImVec2(8, 4);
  st.WindowRounding = 0;
  st.FrameRounding = 3;
  st.GrabRounding = 3;
  st.TabRounding = 3;
  st.ScrollbarSize = 12;
  st.WindowBorderSize = 0;
  st.AntiAliasedLines = true;
  st.AntiAliasedFill = true;
  ImVec4* c = st.Colors;
  auto col = [](Color x) {
    return ImVec4(red_of(x) / 255.0f, green_of(x) / 255.0f, blue_of(x) / 255.0f, alpha_of(x) / 255.0f);
  };
  c[ImGuiCol_WindowBg] = col(kBackground);
  c[ImGuiCol_ChildBg] = col(kBackground);
  c[ImGuiCol_PopupBg] = col(rgba(28, 31, 38, 245));
  c[ImGuiCol_Text] = col(kText);
  c[ImGuiCol_TextDisabled] = col(kTextDim);
  c[ImGuiCol_Border] = col(rgba(60, 65, 80));
  c[ImGuiCol_FrameBg] = col(rgba(40, 44, 55));
  c[ImGuiCol_FrameBgHovered] = col(rgba(52, 58, 72));
  c[ImGuiCol_FrameBgActive] = col(rgba(60, 68, 86));
  c[ImGuiCol_Button] = col(rgba(48, 54, 68));
  c[ImGuiCol_ButtonHovered] = col(rgba(64, 96, 140));
  c[ImGuiCol_ButtonActive] = col(rgba(70, 110, 170));
  c[ImGuiCol_Header] = col(rgba(50, 60, 80));
  c[ImGuiCol_HeaderHovered] = col(rgba(60, 80, 110));
  c[ImGuiCol_HeaderActive] = col(rgba(70, 95, 135));
  c[ImGuiCol_Tab] = col(rgba(36, 40, 50));
  c[ImGuiCol_TabHovered] = col(rgba(64, 96, 140));
  c[ImGuiCol_TabActive] = col(rgba(52, 78, 118));
  c[ImGuiCol_SliderGrab] = col(rgba(90, 140, 210));
  c[ImGuiCol_SliderGrabActive] = col(rgba(120, 170, 240));
  c[ImGuiCol_CheckMark] = col(rgba(120, 190, 255));
  c[ImGuiCol_TableHeaderBg] = col(rgba(38, 43, 54));
  c[ImGuiCol_TableRowBg] = col(rgba(26, 28, 35));
  c[ImGuiCol_TableRowBgAlt] = col(rgba(30, 33, 41));
  c[ImGuiCol_Separator] = col(rgba(60, 65, 80));
}

}  // namespace viz
}  // namespace cclab

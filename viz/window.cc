// viz/window.cc - see window.h.
#define GLFW_INCLUDE_GLEXT
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <cfloat>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "viz/colors.h"
#include "viz/window.h"

namespace cclab {
namespace viz {
namespace {

std::string g_glfw_error;

void glfw_error(int code, const char* what) {
  g_glfw_error = "GLFW error " + std::to_string(code) + ": " + (what ? what : "?");
}

bool have_display() {
  const char* d = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (d && *d) || (w && *w);
}

// GLFW, a window with an OpenGL 3 context (3.3 core, else 3.0, else what the driver gives) and ImGui.
struct Gl {
  GLFWwindow* window = nullptr;
  bool imgui = false, glfw_backend = false;
  const char* glsl = "#version 130";

  bool open(int w, int h, bool visible, const std::string& title, std::string* error) {
    if (!have_display()) {
      *error =
          "no display (DISPLAY is not set): run cclab viz on a desktop, or headless under a virtual X server, "
          "e.g. xvfb-run -a cclab viz TRACE --screenshot out.png (a lab's run: xvfb-run -a cclab lab viz NN "
          "--screenshot out.png)";
      return false;
    }
    glfwSetErrorCallback(glfw_error);
    // An X server can refuse a connection for a moment (a virtual one on a loaded machine, between the
    // many short sessions of a batch of screenshots): try again a few times, 2.5 s in all, before
    // saying there is no display.
    bool up = glfwInit();
    for (int attempt = 1; !up && attempt <= 4; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250 * attempt));
      up = glfwInit();
    }
    if (!up) {
      *error = "cannot initialise GLFW (" + g_glfw_error + "); on a headless machine run under xvfb-run -a";
      return false;
    }
    struct Try {
      int major, minor;
      bool core;
      const char* glsl;
    };
    const Try tries[] = {{3, 3, true, "#version 150"}, {3, 0, false, "#version 130"}, {0, 0, false, "#version 130"}};
    for (const Try& t : tries) {
      glfwDefaultWindowHints();
      glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
      if (t.major > 0) {
        glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, t.major);
        glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, t.minor);
      }
      if (t.core) {
        glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
        glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
      }
      window = glfwCreateWindow(w, h, title.c_str(), nullptr, nullptr);
      if (window) {
        glsl = t.glsl;
        break;
      }
    }
    if (!window) {
      *error = "cannot create an OpenGL 3 window (" + g_glfw_error + ")";
      glfwTerminate();
      return false;
    }
    glfwMakeContextCurrent(window);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    imgui = true;
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // no imgui.ini: the layout is fixed, screenshots deterministic
    io.LogFilename = nullptr;
    io.Fonts->AddFontDefault();  // the embedded ProggyClean 13 px: the same on every machine
    apply_theme();
    return true;
  }

  ~Gl() {
    if (imgui) {
      ImGui_ImplOpenGL3_Shutdown();
      if (glfw_backend) ImGui_ImplGlfw_Shutdown();
      ImGui::DestroyContext();
    }
    if (window) {
      glfwDestroyWindow(window);
      glfwTerminate();
    }
  }
};

void clear_color() {
  glClearColor(red_of(kBackground) / 255.0f, green_of(kBackground) / 255.0f, blue_of(kBackground) / 255.0f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
}

template <typename F>
bool load_proc(F* f, const char* name) {
  *f = reinterpret_cast<F>(glfwGetProcAddress(name));
  return *f != nullptr;
}

}  // namespace

int run_interactive(VizState* s, std::string* error) {
  Gl gl;
  if (!gl.open(s->opt.width, s->opt.height, true, "cclab viz - " + s->title, error)) return 1;
  glfwSwapInterval(1);
  gl.glfw_backend = ImGui_ImplGlfw_InitForOpenGL(gl.window, true);
  if (!ImGui_ImplOpenGL3_Init(gl.glsl)) {
    *error = "cannot initialise ImGui's OpenGL 3 renderer";
    return 1;
  }
  auto last = std::chrono::steady_clock::now();
  while (!glfwWindowShouldClose(gl.window)) {
    const bool busy = s->tl.playing || (s->live && s->live->state() != LiveSource::State::kComplete &&
                                        s->live->state() != LiveSource::State::kFailed);
    if (busy) glfwPollEvents();
    else glfwWaitEventsTimeout(0.25);
    const auto now = std::chrono::steady_clock::now();
    const float dt = std::chrono::duration<float>(now - last).count();
    last = now;
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    draw_frame(s, dt);
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(gl.window, &fw, &fh);
    glViewport(0, 0, fw, fh);
    clear_color();
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    glfwSwapBuffers(gl.window);
  }
  return 0;
}

int run_screenshot(VizState* s, std::string* error) {
  if (!follow_live_to_end(s, error)) return 1;
  const int w = s->opt.width, h = s->opt.height;
  Gl gl;
  if (!gl.open(w, h, false, "cclab viz", error)) return 1;
  if (!ImGui_ImplOpenGL3_Init(gl.glsl)) {
    *error = "cannot initialise ImGui's OpenGL 3 renderer";
    return 1;
  }
  PFNGLGENFRAMEBUFFERSPROC gen_fb;
  PFNGLBINDFRAMEBUFFERPROC bind_fb;
  PFNGLDELETEFRAMEBUFFERSPROC del_fb;
  PFNGLGENRENDERBUFFERSPROC gen_rb;
  PFNGLBINDRENDERBUFFERPROC bind_rb;
  PFNGLDELETERENDERBUFFERSPROC del_rb;
  PFNGLRENDERBUFFERSTORAGEPROC rb_storage;
  PFNGLFRAMEBUFFERRENDERBUFFERPROC fb_rb;
  PFNGLCHECKFRAMEBUFFERSTATUSPROC fb_status;
  if (!load_proc(&gen_fb, "glGenFramebuffers") || !load_proc(&bind_fb, "glBindFramebuffer") ||
      !load_proc(&del_fb, "glDeleteFramebuffers") || !load_proc(&gen_rb, "glGenRenderbuffers") ||
      !load_proc(&bind_rb, "glBindRenderbuffer") || !load_proc(&del_rb, "glDeleteRenderbuffers") ||
      !load_proc(&rb_storage, "glRenderbufferStorage") || !load_proc(&fb_rb, "glFramebufferRenderbuffer") ||
      !load_proc(&fb_status, "glCheckFramebufferStatus")) {
    *error = "the OpenGL driver has no framebuffer objects";
    return 1;
  }
  GLuint fbo = 0, rbo = 0;
  gen_fb(1, &fbo);
  bind_fb(GL_FRAMEBUFFER, fbo);
  gen_rb(1, &rbo);
  bind_rb(GL_RENDERBUFFER, rbo);
  rb_storage(GL_RENDERBUFFER, GL_RGBA8, w, h);
  fb_rb(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, rbo);
  if (fb_status(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
    *error = "cannot create a " + std::to_string(w) + "x" + std::to_string(h) + " offscreen framebuffer";
    return 1;
  }
  ImGuiIO& io = ImGui::GetIO();
  // CCLAB_VIZ_MOUSE=X,Y puts the mouse there (hover tooltips in screenshots; a testing aid).
  ImVec2 mouse(-FLT_MAX, -FLT_MAX);
  if (const char* m = std::getenv("CCLAB_VIZ_MOUSE")) {
    float x = 0, y = 0;
    if (std::sscanf(m, "%f,%f", &x, &y) == 2) {
      mouse = ImVec2(x, y);
      s->interactive = true;
    }
  }
  // A few frames so that tabs, tables and child windows settle (ImGui sizes some things a frame late).
  for (int frame = 0; frame < 4; ++frame) {
    ImGui_ImplOpenGL3_NewFrame();
    io.DisplaySize = ImVec2(static_cast<float>(w), static_cast<float>(h));
    io.DisplayFramebufferScale = ImVec2(1, 1);
    io.DeltaTime = 1.0f / 60.0f;
    io.MousePos = mouse;
    ImGui::NewFrame();
    draw_frame(s, 0.0f);
    ImGui::Render();
    bind_fb(GL_FRAMEBUFFER, fbo);
    glViewport(0, 0, w, h);
    clear_color();
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  }
  glFinish();
  std::vector<unsigned char> rgba(static_cast<size_t>(w) * h * 4), rgb(static_cast<size_t>(w) * h * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  for (int y = 0; y < h; ++y) {  // OpenGL's rows are bottom-up
    const unsigned char* src = &rgba[static_cast<size_t>(h - 1 - y) * w * 4];
    unsigned char* dst = &rgb[static_cast<size_t>(y) * w * 3];
    for (int x = 0; x < w; ++x) {
      dst[3 * x] = src[4 * x];
      dst[3 * x + 1] = src[4 * x + 1];
      dst[3 * x + 2] = src[4 * x + 2];
    }
  }
  bind_fb(GL_FRAMEBUFFER, 0);
  del_rb(1, &rbo);
  del_fb(1, &fbo);
  if (!stbi_write_png(s->opt.screenshot.c_str(), w, h, 3, rgb.data(), w * 3)) {
    *error = s->opt.screenshot + ": cannot write the PNG";
    return 1;
  }
  if (!s->opt.layout_json.empty()) {
    std::ofstream out(s->opt.layout_json, std::ios::binary);
    out << s->drawn.to_json(s->has_trace ? &s->trace() : nullptr);
    if (!out) {
      *error = s->opt.layout_json + ": cannot write the layout";
      return 1;
    }
  }
  // Say what was written: a headless run otherwise ends in silence, and a student cannot tell it worked.
  if (s->drawn.view == View::kCurves)
    std::printf("wrote %s (%d x %d pixels, the curves view)\n", s->opt.screenshot.c_str(), w, h);
  else
    std::printf("wrote %s (%d x %d pixels, the %s view at %.3f us)\n", s->opt.screenshot.c_str(), w, h,
                view_name(s->drawn.view), s->drawn.at_us);
  std::fflush(stdout);
  return 0;
}

}  // namespace viz
}  // namespace cclab

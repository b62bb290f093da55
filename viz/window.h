// viz/window.h - the GLFW window and OpenGL 3 context: the interactive loop, and headless rendering of
// one screenshot into an offscreen framebuffer of an invisible window.
#pragma once

#include <string>

#include "viz/app.h"

namespace cclab {
namespace viz {

// Opens a window and runs until it is closed. 0, or 1 with *error.
int run_interactive(VizState* s, std::string* error);
// Renders s->opt.screenshot (PNG, s->opt.width x height) after a few frames, and the --layout-json
// file when asked. 0, or 1 with *error.
int run_screenshot(VizState* s, std::string* error);

}  // namespace viz
}  // namespace cclab

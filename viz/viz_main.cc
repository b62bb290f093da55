// viz/viz_main.cc - `cclab viz`: flags, loading, then the window or a headless screenshot.
#include "viz/viz.h"

#include <cstdio>

#include "viz/app.h"
#include "viz/options.h"
#include "viz/window.h"

namespace cclab {
namespace viz {

int viz_main(const std::vector<std::string>& args) {
  const VizParse p = parse_viz_args(args);
  if (p.help) {
    std::fputs(viz_usage().c_str(), stdout);
    return 0;
  }
  if (!p.ok) {
    std::fprintf(stderr, "cclab viz: %s\n(cclab viz --help lists the flags)\n", p.message.c_str());
    return 2;
  }
  VizState s;
  s.opt = p.options;
  s.interactive = s.opt.screenshot.empty();
  std::string err;
  if (!init_state(&s, &err)) {
    std::fprintf(stderr, "cclab viz: %s\n", err.c_str());
    return 1;
  }
  const int rc = s.interactive ? run_interactive(&s, &err) : run_screenshot(&s, &err);
  if (rc != 0) std::fprintf(stderr, "cclab viz: %s\n", err.c_str());
  return rc;
}

}  // namespace viz
}  // namespace cclab

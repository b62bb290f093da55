// viz/viz.h - `cclab viz`: the visualiser of cclab traces (offline files and live runs). The cclab
// executable dispatches `cclab viz ARGS...` here (args exclude "cclab viz"); see options.h for the
// flags and docs/visualiser.md for the views.
//
// Exit status: 0 ok (a screenshot was written, or the window was closed), 1 the trace, a curves file or
// the display could not be used (message on stderr), 2 bad usage.
#pragma once

#include <string>
#include <vector>

namespace cclab {
namespace viz {

int viz_main(const std::vector<std::string>& args);

}  // namespace viz
}  // namespace cclab

// runtime/cli/labs/labs.cc - the course of labs/README.md, in order. A lab is a labs/NN-name/ folder and a
// labs/labNN.cc with its checks and driver, listed here by its make_labNN(); a Lab with `written` false
// (only number, folder and title) shows in `cclab lab list` as not written yet.
#include "labs/labs.h"

namespace cclab::lab {

const std::vector<Lab>& all_labs() {
  static const std::vector<Lab> labs{
      make_lab01(),
      make_lab02(),
      make_lab03(),
      make_lab04(),
      make_lab05(),
      make_lab06(),
      make_lab07(),
      make_lab08(),
  };
  return labs;
}

}  // namespace cclab::lab

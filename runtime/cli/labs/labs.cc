// runtime/cli/labs/labs.cc - the course of labs/README.md, in order. A lab that is not written yet has
// only its number, folder and title; writing one means a labs/NN-name/ folder, a labs/labNN.cc with its
// checks and driver, and its make_labNN() here instead of the placeholder.
#include "labs/labs.h"

namespace cclab::lab {
namespace {

Lab planned(const char* number, const char* folder, const char* title) {
  Lab l;
  l.number = number;
  l.folder = folder;
  l.title = title;
  return l;
}

}  // namespace

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

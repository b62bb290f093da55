// runtime/cli/labs/labs.h - one function per written lab, returning its checks and driver
// (labs/labNN.cc); the table of all labs is in labs.cc.
#pragma once

#include "lab_cmd.h"

namespace cclab::lab {

Lab make_lab01();  // labs/lab01.cc: Ring all_reduce by hand
Lab make_lab02();  // labs/lab02.cc: Pipelining and chunks
Lab make_lab03();  // labs/lab03.cc: Protocols: Simple, LL, LL128
Lab make_lab04();  // labs/lab04.cc: Ring vs double binary tree
Lab make_lab05();  // labs/lab05.cc: Topology and channels
Lab make_lab06();  // labs/lab06.cc: Across nodes
Lab make_lab07();  // labs/lab07.cc: Debugging a hang
Lab make_lab08();  // labs/lab08.cc: Your own algorithm

}  // namespace cclab::lab

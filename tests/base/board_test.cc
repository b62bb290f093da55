// tests/base/board_test.cc - the status board (runtime/base/board.h): ranks write their slots through
// Board, and board_judge's verdicts over generated situations: every collective x mismatched field, a rank
// that left, a dead process, a late rank, a cycle of waits.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/board.h"

namespace cclab {
namespace {

std::string unique_id() { return "test-" + std::to_string(getpid()) + "-" + std::to_string(rand()); }

BoardOp coll(uint64_t seq, int coll_kind, uint64_t count, int dtype = 7, int redop = 0, int root = 0) {
  BoardOp o{};
  o.seq = seq;
  o.coll_seq = seq;
  o.kind = kBoardColl;
  o.coll = coll_kind;
  o.dtype = dtype;
  o.redop = redop;
  o.root = root;
  o.count = count;
  o.nchannels = 1;
  o.proto = 2;
  snprintf(o.algo, sizeof o.algo, "Ring");
  return o;
}

BoardWait wait_for(int peer, int channel = 0) {
  BoardWait w{};
  w.since_us = 1;  // long ago: asleep for as long as the test wants
  w.peer = peer;
  w.channel = channel;
  w.for_data = 1;
  w.step = 2;
  return w;
}

// n ranks of this process on one board.
struct Ranks {
  explicit Ranks(int n) : boards(n) {
    const std::string id = unique_id();
    for (int r = 0; r < n; ++r) {
      std::string why;
      EXPECT_TRUE(boards[r].open(id, n, r, 42, &why)) << why;
    }
  }
  BoardVerdict judge() { return board_judge(board_snapshot(boards[0]), 0); }
  std::vector<Board> boards;
};

TEST(Board, SlotsAreSharedThroughTheObjectAndRemovedByTheLastRank) {
  const std::string id = unique_id();
  std::string name;
  {
    Ranks k(2);
    name = k.boards[0].name();
    k.boards[1].op_begin(coll(0, 0, 100));
    BoardSnapshot s;
    std::string why;
    ASSERT_TRUE(board_read(name, &s, &why)) << why;
    ASSERT_EQ(s.slots.size(), 2u);
    EXPECT_EQ(s.slots[1].pid, getpid());
    EXPECT_EQ(s.slots[1].ops[0].count, 100u);
    EXPECT_EQ(s.slots[1].ops[0].state, kBoardOpRunning);
    EXPECT_EQ(s.alive[1], 1);
  }
  BoardSnapshot s;
  std::string why;
  EXPECT_FALSE(board_read(name, &s, &why)) << "the last rank to leave removes the board";
}

// Every collective, and for each the field a rank gets wrong: the verdict is certain misuse naming both.
TEST(Board, EveryMismatchedFieldIsCertainMisuse) {
  struct Field {
    const char* name;
    void (*spoil)(BoardOp*);
  };
  const Field fields[] = {
      {"collective", [](BoardOp* o) { o->coll = o->coll == 3 ? 0 : 3; }},
      {"count", [](BoardOp* o) { o->count /= 2; }},
      {"datatype", [](BoardOp* o) { o->dtype = 2; }},
  };
  for (int c = 0; c < 5; ++c) {
    for (const Field& f : fields) {
      Ranks k(4);
      for (int r = 0; r < 4; ++r) {
        BoardOp o = coll(0, c, 1 << 20);
        if (r == 3) f.spoil(&o);
        k.boards[r].op_begin(o);
        if (r != 3) k.boards[r].wait_begin(board_wait_index(0, true), wait_for((r + 3) % 4));
      }
      const BoardVerdict v = k.judge();
      EXPECT_TRUE(v.certain) << board_coll_name(c) << " / " << f.name << ": " << v.summary;
      EXPECT_EQ(v.code, 5);
      EXPECT_NE(v.summary.find("collective #0 differs between ranks"), std::string::npos) << v.summary;
      EXPECT_NE(v.summary.find("rank 3 called"), std::string::npos) << v.summary;
      EXPECT_NE(v.summary.find("ranks 0-2 called"), std::string::npos) << v.summary;
    }
  }
  // The op matters to reductions, the root to rooted collectives; not the other way round.
  {
    Ranks k(2);
    k.boards[0].op_begin(coll(0, 0, 8, 7, 0));
    k.boards[1].op_begin(coll(0, 0, 8, 7, 2));
    EXPECT_TRUE(k.judge().certain) << "all_reduce sum vs max";
  }
  {
    Ranks k(2);
    k.boards[0].op_begin(coll(0, 1, 8, 7, 0, 0));
    k.boards[1].op_begin(coll(0, 1, 8, 7, 0, 1));
    EXPECT_TRUE(k.judge().certain) << "broadcast root 0 vs 1";
  }
  {
    Ranks k(2);
    k.boards[0].op_begin(coll(0, 3, 8, 7, 0, 0));
    k.boards[1].op_begin(coll(0, 3, 8, 7, 2, 1));
    EXPECT_FALSE(k.judge().certain) << "all_gather ignores op and root";
  }
}

TEST(Board, AgreeingRanksAreNotJudged) {
  Ranks k(3);
  for (int r = 0; r < 3; ++r) k.boards[r].op_begin(coll(0, 0, 64));
  const BoardVerdict v = k.judge();
  EXPECT_FALSE(v.certain) << v.summary;
  EXPECT_FALSE(v.stuck);
}

TEST(Board, ARankThatLeftWithoutCallingIsCertain) {
  Ranks k(3);
  for (int r = 0; r < 2; ++r) {
    k.boards[r].op_begin(coll(0, 0, 64));
    k.boards[r].wait_begin(board_wait_index(0, true), wait_for(2));
  }
  k.boards[2].close();
  const BoardVerdict v = k.judge();
  EXPECT_TRUE(v.certain);
  EXPECT_EQ(v.code, 5);
  EXPECT_NE(v.summary.find("rank 2 left the communicator"), std::string::npos) << v.summary;
}

TEST(Board, ALateRankIsReportedNotFailed) {
  Ranks k(4);
  for (int r = 0; r < 3; ++r) {
    k.boards[r].op_begin(coll(5, 0, 64));
    k.boards[r].wait_begin(board_wait_index(0, true), wait_for(r == 0 ? 3 : r - 1));
  }
  k.boards[3].op_begin(coll(4, 0, 64));
  k.boards[3].op_end(4, true, nullptr);
  const BoardVerdict v = k.judge();
  EXPECT_FALSE(v.certain) << v.summary;
  EXPECT_TRUE(v.stuck);
  EXPECT_NE(v.summary.find("rank 3 has not called collective #5"), std::string::npos) << v.summary;
  bool chain = false;
  for (const std::string& l : v.lines) chain = chain || l.find("the waits lead to rank 3") != std::string::npos;
  EXPECT_TRUE(chain);
}

TEST(Board, ACycleOfWaitsIsNamed) {
  Ranks k(3);
  for (int r = 0; r < 3; ++r) {
    BoardOp o{};
    o.seq = 0;
    o.kind = kBoardP2p;
    o.peer = (r + 1) % 3;
    o.npeers = 1;
    k.boards[r].op_begin(o);
    k.boards[r].wait_begin(board_wait_index(0, false), wait_for((r + 1) % 3));
  }
  const BoardVerdict v = k.judge();
  EXPECT_NE(v.summary.find("a cycle of waits: 0 -> 1 -> 2 -> 0"), std::string::npos) << v.summary;
}

TEST(Board, ADeadProcessIsCertain) {
  const std::string id = unique_id();
  Board me;
  std::string why;
  ASSERT_TRUE(me.open(id, 2, 0, 42, &why)) << why;
  me.op_begin(coll(0, 0, 64));
  me.wait_begin(board_wait_index(0, true), wait_for(1));
  const pid_t child = fork();
  if (child == 0) {
    Board b;
    std::string w;
    if (!b.open(id, 2, 1, 42, &w)) _exit(1);
    _exit(0);  // dies without leaving: no close
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const BoardVerdict v = board_judge(board_snapshot(me), 0);
  EXPECT_TRUE(v.certain);
  EXPECT_EQ(v.code, 6);
  EXPECT_NE(v.summary.find("rank 1 (pid " + std::to_string(child) + ") died"), std::string::npos) << v.summary;
  EXPECT_FALSE(process_alive(child));
  EXPECT_TRUE(process_alive(getpid()));
}

}  // namespace
}  // namespace cclab

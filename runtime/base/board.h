// runtime/base/board.h - the status board: what every rank of a communicator is doing, in shared memory
// that any process of the host can read (issue 22, "who waits on whom").
//
// Each communicator of the host backend opens one board, a POSIX shared-memory object named after the
// communicator's id ("/cclab-board-<id>"), with one slot per rank. A rank writes into its own slot only:
//   - its last kBoardOps operations (a flight recorder, as PyTorch's): sequence numbers, collective,
//     count, datatype, op, root, algorithm, protocol, channels, state and times;
//   - its waits that went to sleep (after the spin and yield phases, so never on the fast path): channel,
//     peer, step, data or credits, since when;
//   - whether it left (destroyed or aborted its communicator) and the error that ended an operation.
// Any rank (a stuck wait), the SIGUSR1 handler's thread or `cclab doctor` reads every slot and judges
// (board_judge): the ranks that called a different collective or count, the rank that never arrived,
// the dead process, the rank a chain or cycle of waits points at. Ranks on other hosts have their own
// board there: a board sees the ranks of its host.
//
// Writes are plain stores of aligned words (relaxed atomics); a reader in another process may see a
// torn operation record while it is being written, which only matters for an op in flight - and a
// judgement is made of ranks that have been stuck for a second or more.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cclab {

constexpr uint64_t kBoardMagic = 0x6363626f61726431ull;  // "ccboard1"
constexpr int kBoardOps = 32;     // operations each rank keeps (by sequence number modulo)
constexpr int kBoardWaits = 128;  // sleeping waits a rank shows: [channel % 64][send side]
constexpr int kBoardNameLen = 16;

enum BoardOpState : uint32_t { kBoardOpFree = 0, kBoardOpRunning = 1, kBoardOpDone = 2, kBoardOpFailed = 3 };
enum BoardSlotState : uint32_t { kBoardSlotEmpty = 0, kBoardSlotLive = 1, kBoardSlotLeft = 2 };
// What an operation is: a collective (all ranks call it, in the same order, with the same arguments) or
// a group's point-to-point operations (each rank its own).
enum BoardOpKind : uint32_t { kBoardColl = 0, kBoardP2p = 1 };

struct BoardOp {
  uint64_t seq;        // the communicator's opCount (every operation)
  uint64_t coll_seq;   // collectives only: the n-th collective of the communicator (p2p: the next one's)
  uint32_t kind;       // BoardOpKind
  uint32_t state;      // BoardOpState
  int32_t coll;        // CollKind
  int32_t dtype;       // ncclDataType_t
  int32_t redop;       // ncclRedOp_t (>= ncclNumOps: a PreMulSum op)
  int32_t root;
  uint64_t count;      // elements (p2p: bytes sent + received)
  int32_t nchannels;
  int32_t proto;       // kProtoLL / kProtoLL128 / kProtoSimple
  int32_t peer;        // p2p: the first peer (-1: none)
  int32_t npeers;      // p2p: operations in the group
  double begin_us;     // CLOCK_MONOTONIC microseconds (comparable between the host's processes)
  double end_us;
  char algo[kBoardNameLen];
};

struct BoardWait {
  double since_us;     // 0: no wait here
  uint64_t op_seq;
  uint64_t step;
  int32_t channel;
  int32_t peer;
  int32_t for_data;    // 1: data (the peer's tail); 0: FIFO credits (the peer's head)
  int32_t prim;        // PrimKind
};

struct BoardSlot {
  int32_t pid;         // 0: the rank never opened the board
  int32_t rank;
  uint32_t state;      // BoardSlotState
  uint32_t pad;
  uint64_t host_hash;
  double joined_us;
  double left_us;
  uint64_t ops_begun;  // operations begun (the next seq is this)
  uint64_t colls_begun;
  char error[192];     // the error that ended its last failed operation ("" none)
  BoardOp ops[kBoardOps];
  BoardWait waits[kBoardWaits];
};

struct BoardHeader {
  uint64_t magic;
  int32_t nranks;
  int32_t refs;              // ranks that have it open (the last to close unlinks it)
  uint64_t reported;         // reports printed: one per judgement key (board_claim_report)
  uint64_t report_key;
  double created_us;
  char id[48];
};

// One rank's handle on a communicator's board.
class Board {
 public:
  Board() = default;
  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;
  // Opens (creating if needed) the board of communicator `id` with `nranks` slots and claims slot `rank`.
  // False (with *why) when shared memory is unavailable: the runtime then runs without a board.
  bool open(const std::string& id, int nranks, int rank, uint64_t host_hash, std::string* why);
  // Marks the slot left (destroyed or aborted) and unmaps; the last rank of the host unlinks the object.
  void close();
  // Marks the slot left and unlinks the object if it was the last, but keeps it mapped (the process exits).
  void leave();
  ~Board() { close(); }
  bool is_open() const { return slot_ != nullptr; }

  // The writer's side (rank `rank` only). op_begin fills the record of `op.seq` and marks it running.
  void op_begin(const BoardOp& op);
  void op_end(uint64_t seq, bool ok, const char* error);
  void wait_begin(int index, const BoardWait& w);
  void wait_end(int index);

  BoardHeader* header() const { return hdr_; }
  BoardSlot* slot(int r) const;
  int nranks() const { return nranks_; }
  int rank() const { return rank_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  BoardHeader* hdr_ = nullptr;
  BoardSlot* slot_ = nullptr;
  size_t bytes_ = 0;
  int nranks_ = 0, rank_ = -1;
};

// The index of a wait in BoardSlot::waits.
inline int board_wait_index(int channel, bool for_data) { return (channel & 63) * 2 + (for_data ? 0 : 1); }

// A copy of a board taken at one moment, with each rank's process checked (alive or dead).
struct BoardSnapshot {
  std::string name;
  BoardHeader header{};
  std::vector<BoardSlot> slots;
  std::vector<int> alive;  // per rank: 1 alive, 0 dead, -1 unknown (no slot)
  double now_us = 0;
};

// Reads the shared-memory object `name` ("/cclab-board-..."); false with *why when it cannot.
bool board_read(const std::string& name, BoardSnapshot* out, std::string* why);
// Copies an open board.
BoardSnapshot board_snapshot(const Board& b);
// True when no rank of the board is live in a running process (a finished or killed job's board).
bool board_all_ended(const BoardSnapshot& s);
// The boards on this host (/dev/shm/cclab-board-*), by name.
std::vector<std::string> board_list();

// What the board says about a stuck operation.
struct BoardVerdict {
  // Certain: the operation cannot complete (a mismatch, a dead process, a rank that left); the waits end
  // with `code` (an ncclResult_t: ncclInvalidUsage, ncclRemoteError) and `summary`. Not certain: a rank is
  // late or busy elsewhere, and the waits go on.
  bool certain = false;
  int code = 0;
  std::string summary;              // one line: the verdict
  std::vector<std::string> lines;   // the report: every rank's operation and waits, then the verdict
  uint64_t key = 0;                 // identifies the situation judged (the lowest stuck collective)
  bool stuck = false;               // some rank has a wait asleep (for >= min_wait_us)
  // The same, structured (what a trace records of it: core/recorder.h).
  double now_us = 0;                // when the board was read (CLOCK_MONOTONIC microseconds)
  struct Rank {
    int rank = -1;
    int pid = 0;                    // 0: no status
    const char* state = "none";     // "running", "idle", "left", "dead", "none"
    std::string line;               // its line of the report
  };
  std::vector<Rank> ranks;
  std::vector<std::pair<int, BoardWait>> waits;  // (rank, wait): the waits the report lists
};

// Judges a snapshot: waits asleep for at least `min_wait_us` count as stuck.
BoardVerdict board_judge(const BoardSnapshot& s, double min_wait_us);

// Claims the printing of the report for `key` (first caller wins; each key is printed once per board).
bool board_claim_report(BoardHeader* h, uint64_t key);

// Whether process `pid` of this host runs (false once it exited, even before its parent reaps it).
bool process_alive(int pid);

// Short names, as NCCL's logs spell them.
const char* board_coll_name(int coll);
const char* board_type_name(int dtype);
const char* board_op_name(int redop);
const char* board_proto_name(int proto);

}  // namespace cclab

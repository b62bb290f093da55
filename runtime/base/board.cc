#include "base/board.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "base/log.h"
#include "kernels/describe.h"
#include "kernels/primitives.h"
#include "kernels/step_record.h"

namespace cclab {

namespace {

constexpr size_t kHeaderBytes = 256;
static_assert(sizeof(BoardHeader) <= kHeaderBytes, "board header grew");

double mono_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

size_t board_bytes(int nranks) { return kHeaderBytes + static_cast<size_t>(nranks) * sizeof(BoardSlot); }

template <typename T>
void put(T* p, T v) {
  __atomic_store(p, &v, __ATOMIC_RELAXED);
}
void put_release(double* p, double v) { __atomic_store(p, &v, __ATOMIC_RELEASE); }

bool pid_alive(int pid) { return process_alive(pid); }


// "0, 1, 2" / "0-3" for a sorted list of ranks.
std::string rank_list(const std::vector<int>& r) {
  if (r.empty()) return "none";
  bool run = r.size() > 2;
  for (size_t i = 1; i < r.size(); ++i) run = run && r[i] == r[i - 1] + 1;
  if (run) return string_printf("%d-%d", r.front(), r.back());
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s;
}

std::string ranks_word(const std::vector<int>& r) { return (r.size() == 1 ? "rank " : "ranks ") + rank_list(r); }

bool rooted(int coll) {
  return coll == static_cast<int>(CollKind::kBroadcast) || coll == static_cast<int>(CollKind::kReduce);
}
bool reducing(int coll) {
  return coll == static_cast<int>(CollKind::kAllReduce) || coll == static_cast<int>(CollKind::kReduce) ||
         coll == static_cast<int>(CollKind::kReduceScatter);
}

// What every rank must agree on in a collective: "all_reduce(262144 x float, sum)".
std::string signature(const BoardOp& o) {
  std::string s = string_printf("%s(%llu x %s", board_coll_name(o.coll), static_cast<unsigned long long>(o.count),
                      board_type_name(o.dtype));
  if (reducing(o.coll)) s += std::string(", ") + board_op_name(o.redop);
  if (rooted(o.coll)) s += string_printf(", root %d", o.root);
  return s + ")";
}

std::string describe_op(const BoardOp& o) {
  if (o.kind == kBoardP2p)
    return string_printf("op #%llu: %d send/recv (first with rank %d, %llu bytes in all)", static_cast<unsigned long long>(o.seq),
               o.npeers, o.peer, static_cast<unsigned long long>(o.count));
  return string_printf("op #%llu, collective #%llu: %s, %s/%s on %d channel%s", static_cast<unsigned long long>(o.seq),
             static_cast<unsigned long long>(o.coll_seq), signature(o).c_str(), o.algo, board_proto_name(o.proto),
             o.nchannels, o.nchannels == 1 ? "" : "s");
}

const BoardOp* find_coll(const BoardSlot& s, uint64_t coll_seq) {
  for (const BoardOp& o : s.ops)
    if (o.state != kBoardOpFree && o.kind == kBoardColl && o.coll_seq == coll_seq) return &o;
  return nullptr;
}

const BoardOp* last_op(const BoardSlot& s) {
  const BoardOp* best = nullptr;
  for (const BoardOp& o : s.ops)
    if (o.state != kBoardOpFree && (best == nullptr || o.seq > best->seq)) best = &o;
  return best;
}

}  // namespace

bool process_alive(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A process that exited but was not reaped yet (a zombie: its parent has not waited for it) is dead too.
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (f == nullptr) return true;  // no /proc: kill's answer
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char* paren = strrchr(buf, ')');  // "pid (comm) S ...": the state follows the last ')'
  return paren == nullptr || paren[1] == '\0' || (paren[2] != 'Z' && paren[2] != 'X');
}

const char* board_coll_name(int coll) {
  static const char* const kNames[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "sendrecv"};
  return coll >= 0 && coll < 6 ? kNames[coll] : "?";
}
const char* board_type_name(int t) {
  static const char* const kNames[] = {"int8",    "uint8",   "int32",    "uint32",  "int64",        "uint64",
                                       "float16", "float32", "float64",  "bfloat16", "float8e4m3", "float8e5m2"};
  return t >= 0 && t < 12 ? kNames[t] : "?";
}
const char* board_op_name(int op) {
  static const char* const kNames[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? kNames[op] : "premulsum";
}
const char* board_proto_name(int q) {
  static const char* const kNames[] = {"LL", "LL128", "Simple"};
  return q >= 0 && q < 3 ? kNames[q] : "?";
}

namespace {

// The boards this process has open: at exit each slot is marked left (and the board removed when no other
// rank of it runs), so a program that ends without ncclCommDestroy leaves no object in /dev/shm and its
// peers in other processes see it leave. Never destroyed (exit handlers may run after static destructors).
std::mutex& open_mu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::set<Board*>& open_boards() {
  static std::set<Board*>* boards = new std::set<Board*>;
  return *boards;
}

void leave_all_at_exit() {
  std::lock_guard<std::mutex> lk(open_mu());
  for (Board* b : open_boards()) b->leave();
}

// Boards whose ranks all ended - jobs killed (a SIGKILL runs no exit handler) - removed once per process
// at its first board, when older than kStaleUs (a board being created has no live slot for a moment).
constexpr double kStaleUs = 10e6;
void sweep_stale_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    atexit(leave_all_at_exit);
    const double now = mono_us();
    for (const std::string& name : board_list()) {
      BoardSnapshot s;
      std::string why;
      if (board_read(name, &s, &why) && board_all_ended(s) && now - s.header.created_us > kStaleUs)
        shm_unlink(name.c_str());
    }
  });
}

}  // namespace

bool board_all_ended(const BoardSnapshot& s) {
  for (size_t r = 0; r < s.slots.size(); ++r)
    if (s.slots[r].pid != 0 && s.slots[r].state == kBoardSlotLive && s.alive[r] == 1) return false;
  return true;
}

bool Board::open(const std::string& id, int nranks, int rank, uint64_t host_hash, std::string* why) {
  close();
  sweep_stale_once();
  name_ = "/cclab-board-" + id;
  const size_t bytes = board_bytes(nranks);
  const int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    *why = string_printf("shm_open %s: %s", name_.c_str(), strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || (static_cast<size_t>(st.st_size) < bytes && ftruncate(fd, static_cast<off_t>(bytes)) != 0)) {
    *why = string_printf("sizing %s: %s", name_.c_str(), strerror(errno));
    ::close(fd);
    return false;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    *why = string_printf("mapping %s: %s", name_.c_str(), strerror(errno));
    return false;
  }
  bytes_ = bytes;
  nranks_ = nranks;
  rank_ = rank;
  hdr_ = static_cast<BoardHeader*>(p);
  if (__atomic_load_n(&hdr_->magic, __ATOMIC_ACQUIRE) != kBoardMagic) {
    // Every rank that finds it new writes the same header.
    put(&hdr_->nranks, static_cast<int32_t>(nranks));
    put(&hdr_->created_us, mono_us());
    snprintf(hdr_->id, sizeof hdr_->id, "%s", id.c_str());
    __atomic_store_n(&hdr_->magic, kBoardMagic, __ATOMIC_RELEASE);
  }
  __atomic_fetch_add(&hdr_->refs, 1, __ATOMIC_ACQ_REL);
  slot_ = slot(rank);
  memset(static_cast<void*>(slot_), 0, sizeof(BoardSlot));
  slot_->rank = rank;
  slot_->host_hash = host_hash;
  slot_->joined_us = mono_us();
  put(&slot_->state, static_cast<uint32_t>(kBoardSlotLive));
  __atomic_store_n(&slot_->pid, static_cast<int32_t>(getpid()), __ATOMIC_RELEASE);
  std::lock_guard<std::mutex> lk(open_mu());
  open_boards().insert(this);
  return true;
}

BoardSlot* Board::slot(int r) const {
  return reinterpret_cast<BoardSlot*>(reinterpret_cast<char*>(hdr_) + kHeaderBytes + static_cast<size_t>(r) * sizeof(BoardSlot));
}

void Board::close() {
  if (hdr_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lk(open_mu());
    open_boards().erase(this);
  }
  leave();
  munmap(hdr_, bytes_);
  hdr_ = nullptr;
  slot_ = nullptr;
}

void Board::leave() {
  if (hdr_ == nullptr || __atomic_load_n(&slot_->state, __ATOMIC_ACQUIRE) == kBoardSlotLeft) return;
  // A child forked after the board was opened does not own the slot: its exit is not the rank's.
  if (__atomic_load_n(&slot_->pid, __ATOMIC_ACQUIRE) != getpid()) return;
  for (int i = 0; i < kBoardWaits; ++i) put(&slot_->waits[i].since_us, 0.0);
  put(&slot_->left_us, mono_us());
  __atomic_store_n(&slot_->state, static_cast<uint32_t>(kBoardSlotLeft), __ATOMIC_RELEASE);
  __atomic_fetch_sub(&hdr_->refs, 1, __ATOMIC_ACQ_REL);
  // The last rank of the host to leave removes it. A rank whose process died never leaves, so "last"
  // is: no other slot is live in a live process.
  bool others = false;
  for (int r = 0; r < nranks_ && !others; ++r) {
    if (r == rank_) continue;
    const BoardSlot* s = slot(r);
    const int pid = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);
    others = pid != 0 && __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == kBoardSlotLive && pid_alive(pid);
  }
  if (!others) shm_unlink(name_.c_str());
}

void Board::op_begin(const BoardOp& op) {
  BoardOp& o = slot_->ops[op.seq % kBoardOps];
  put(&o.state, static_cast<uint32_t>(kBoardOpFree));
  o = op;
  o.state = kBoardOpFree;
  o.begin_us = mono_us();
  o.end_us = 0;
  __atomic_store_n(&o.state, static_cast<uint32_t>(kBoardOpRunning), __ATOMIC_RELEASE);
  put(&slot_->ops_begun, op.seq + 1);
  if (op.kind == kBoardColl) put(&slot_->colls_begun, op.coll_seq + 1);
}

void Board::op_end(uint64_t seq, bool ok, const char* error) {
  BoardOp& o = slot_->ops[seq % kBoardOps];
  if (o.seq != seq) return;
  put(&o.end_us, mono_us());
  if (!ok && error != nullptr) snprintf(slot_->error, sizeof slot_->error, "%s", error);
  __atomic_store_n(&o.state, static_cast<uint32_t>(ok ? kBoardOpDone : kBoardOpFailed), __ATOMIC_RELEASE);
}

void Board::wait_begin(int index, const BoardWait& w) {
  BoardWait& d = slot_->waits[index];
  d.op_seq = w.op_seq;
  d.step = w.step;
  d.channel = w.channel;
  d.peer = w.peer;
  d.for_data = w.for_data;
  d.prim = w.prim;
  put_release(&d.since_us, w.since_us > 0 ? w.since_us : mono_us());
}

void Board::wait_end(int index) { put_release(&slot_->waits[index].since_us, 0.0); }

namespace {

void fill_alive(BoardSnapshot* s) {
  s->alive.assign(s->slots.size(), -1);
  for (size_t r = 0; r < s->slots.size(); ++r)
    if (s->slots[r].pid != 0) s->alive[r] = pid_alive(s->slots[r].pid) ? 1 : 0;
  s->now_us = mono_us();
}

}  // namespace

BoardSnapshot board_snapshot(const Board& b) {
  BoardSnapshot s;
  s.name = b.name();
  memcpy(static_cast<void*>(&s.header), b.header(), sizeof(BoardHeader));
  s.slots.resize(b.nranks());
  for (int r = 0; r < b.nranks(); ++r) memcpy(static_cast<void*>(&s.slots[r]), b.slot(r), sizeof(BoardSlot));
  fill_alive(&s);
  return s;
}

bool board_read(const std::string& name, BoardSnapshot* out, std::string* why) {
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) {
    *why = string_printf("%s: %s", name.c_str(), strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < kHeaderBytes) {
    *why = name + ": not a cclab board (too small)";
    ::close(fd);
    return false;
  }
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    *why = string_printf("%s: %s", name.c_str(), strerror(errno));
    return false;
  }
  const auto* h = static_cast<const BoardHeader*>(p);
  bool ok = h->magic == kBoardMagic && h->nranks > 0 &&
            board_bytes(h->nranks) <= static_cast<size_t>(st.st_size);
  if (ok) {
    out->name = name;
    out->header = *h;
    out->slots.resize(h->nranks);
    const char* base = static_cast<const char*>(p) + kHeaderBytes;
    memcpy(static_cast<void*>(out->slots.data()), base, static_cast<size_t>(h->nranks) * sizeof(BoardSlot));
    fill_alive(out);
  } else {
    *why = name + ": not a cclab board (bad header)";
  }
  munmap(p, static_cast<size_t>(st.st_size));
  return ok;
}

std::vector<std::string> board_list() {
  std::vector<std::string> out;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d))
    if (strncmp(e->d_name, "cclab-board-", 12) == 0) out.push_back(std::string("/") + e->d_name);
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool board_claim_report(BoardHeader* h, uint64_t key) {
  uint64_t cur = __atomic_load_n(&h->report_key, __ATOMIC_ACQUIRE);
  while (cur != key)
    if (__atomic_compare_exchange_n(&h->report_key, &cur, key, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      __atomic_fetch_add(&h->reported, 1, __ATOMIC_RELAXED);
      return true;
    }
  return false;
}

BoardVerdict board_judge(const BoardSnapshot& s, double min_wait_us) {
  BoardVerdict v;
  const int n = static_cast<int>(s.slots.size());
  // Each rank: its waits asleep long enough, and its running collectives.
  std::vector<std::vector<const BoardWait*>> waits(n);
  uint64_t lowest = UINT64_MAX;  // the lowest collective a rank is running
  const BoardOp* lowest_op = nullptr;
  for (int r = 0; r < n; ++r) {
    const BoardSlot& sl = s.slots[r];
    if (sl.pid == 0) continue;
    for (const BoardWait& w : sl.waits)
      if (w.since_us > 0 && s.now_us - w.since_us >= min_wait_us) waits[r].push_back(&w);
    for (const BoardOp& o : sl.ops)
      if (o.state == kBoardOpRunning && o.kind == kBoardColl && o.coll_seq < lowest) {
        lowest = o.coll_seq;
        lowest_op = &o;
      }
    if (!waits[r].empty()) v.stuck = true;
  }
  // No rank in a collective any more (a rank found a mismatch and stopped the others): judge the last
  // collective that failed.
  if (lowest_op == nullptr)
    for (int r = 0; r < n; ++r)
      for (const BoardOp& o : s.slots[r].ops)
        if (s.slots[r].pid != 0 && o.state == kBoardOpFailed && o.kind == kBoardColl &&
            (lowest_op == nullptr || o.coll_seq > lowest)) {
          lowest = o.coll_seq;
          lowest_op = &o;
        }

  // The report: one line per rank, then its waits.
  v.lines.push_back(string_printf("board %s: %d ranks", s.name.c_str(), n));
  v.now_us = s.now_us;
  for (int r = 0; r < n; ++r) {
    const BoardSlot& sl = s.slots[r];
    std::string line = string_printf("  rank %d", r);
    BoardVerdict::Rank vr;
    vr.rank = r;
    vr.pid = sl.pid;
    if (sl.pid == 0) {
      v.lines.push_back(line + ": no status (it has not created its communicator, or runs on another host)");
      vr.line = v.lines.back().substr(2);
      v.ranks.push_back(std::move(vr));
      continue;
    }
    line += string_printf(" (pid %d)", sl.pid);
    const BoardOp* cur = nullptr;
    for (const BoardOp& o : sl.ops)
      if (o.state == kBoardOpRunning && (cur == nullptr || o.seq < cur->seq)) cur = &o;
    const BoardOp* last = last_op(sl);
    if (sl.state == kBoardSlotLeft)
      line += string_printf(": left (destroyed or aborted its communicator %.1f s ago%s)", (s.now_us - sl.left_us) / 1e6,
                  s.alive[r] == 0 ? "; its process has ended since" : "");
    else if (s.alive[r] == 0)
      line += ": DEAD (its process ended)";
    if (cur != nullptr) {
      line += string_printf(": in %s for %.1f s", describe_op(*cur).c_str(), (s.now_us - cur->begin_us) / 1e6);
    } else if (last != nullptr) {
      line += string_printf(": not in a call on this communicator; its last operation (%s) %s %.1f s ago", describe_op(*last).c_str(),
                  last->state == kBoardOpFailed ? "failed" : "ended", (s.now_us - last->end_us) / 1e6);
    } else {
      line += ": has begun no operation";
    }
    v.lines.push_back(line);
    vr.state = sl.state == kBoardSlotLeft ? "left" : s.alive[r] == 0 ? "dead" : cur != nullptr ? "running" : "idle";
    vr.line = line.substr(2);
    v.ranks.push_back(std::move(vr));
    for (const BoardWait* w : waits[r]) v.waits.emplace_back(r, *w);
    for (const BoardWait* w : waits[r])
      if (w->step == kConnectStep)
        v.lines.push_back(string_printf("      waits for rank %d to connect on channel %d (its first call of this operation) for %.1f s",
                                        w->peer, w->channel, (s.now_us - w->since_us) / 1e6));
      else
      v.lines.push_back(string_printf("      waits for %s from rank %d on channel %d for step %llu (%s) for %.1f s",
                            w->for_data ? "data" : "FIFO credits", w->peer, w->channel,
                            static_cast<unsigned long long>(w->step), prim_name(static_cast<PrimKind>(w->prim)),
                            (s.now_us - w->since_us) / 1e6));
    if (sl.error[0] != '\0' && last != nullptr && last->state == kBoardOpFailed)
      v.lines.push_back(std::string("      its error: ") + sl.error);
  }

  std::vector<int> stuck_ranks;
  for (int r = 0; r < n; ++r)
    if (!waits[r].empty()) stuck_ranks.push_back(r);
  std::vector<std::string> verdicts;
  auto verdict = [&](bool certain, int code, const std::string& text, uint64_t kind) {
    if (v.summary.empty()) {
      v.summary = text;
      v.certain = certain;
      v.code = code;
      v.key = (lowest == UINT64_MAX ? 0 : lowest + 1) * 16 + kind;
    }
    verdicts.push_back(text);
  };

  // 1. Dead processes.
  std::vector<int> dead;
  for (int r = 0; r < n; ++r)
    if (s.alive[r] == 0 && s.slots[r].state != kBoardSlotLeft) dead.push_back(r);
  if (!dead.empty())
    verdict(true, ncclRemoteError,
            string_printf("%s (pid %d%s) died: %s process ended without leaving the communicator%s%s", ranks_word(dead).c_str(),
                s.slots[dead[0]].pid, dead.size() > 1 ? ", ..." : "", dead.size() > 1 ? "their" : "its",
                stuck_ranks.empty() ? "" : "; waiting for it: ", stuck_ranks.empty() ? "" : ranks_word(stuck_ranks).c_str()),
            1);

  if (lowest_op != nullptr) {
    // 2. The lowest collective a rank is in: what did every rank call as that collective?
    std::map<std::string, std::vector<int>> by_sig;
    std::vector<int> missing, left, gone;
    for (int r = 0; r < n; ++r) {
      const BoardSlot& sl = s.slots[r];
      if (sl.pid == 0) {
        missing.push_back(r);
        continue;
      }
      if (const BoardOp* o = find_coll(sl, lowest)) {
        by_sig[signature(*o)].push_back(r);
      } else if (sl.colls_begun <= lowest) {
        (sl.state == kBoardSlotLeft ? left : missing).push_back(r);
      } else {
        gone.push_back(r);  // far ahead: its record of that collective was overwritten
      }
    }
    const std::string what = string_printf("collective #%llu", static_cast<unsigned long long>(lowest));
    if (by_sig.size() > 1) {
      std::string text = what + " differs between ranks:";
      for (const auto& kv : by_sig) text += " " + ranks_word(kv.second) + " called " + kv.first + ";";
      text.back() = '.';
      text += " Every rank must call the same collectives in the same order, with the same count, datatype, op and root";
      verdict(true, ncclInvalidUsage, text, 2);
    }
    const std::string sig = signature(*lowest_op);
    if (!left.empty())
      verdict(true, ncclInvalidUsage,
              string_printf("%s left the communicator (ncclCommDestroy / ncclCommAbort) without calling %s, %s, which %s %s in",
                  ranks_word(left).c_str(), what.c_str(), sig.c_str(),
                  ranks_word(by_sig.begin()->second).c_str(), by_sig.begin()->second.size() == 1 ? "is" : "are"),
              3);
    std::vector<int> alive_missing;
    for (int r : missing)
      if (s.slots[r].pid == 0 || s.alive[r] != 0) alive_missing.push_back(r);
    if (!alive_missing.empty()) {
      std::string text = string_printf("%s %s not called %s, %s, which the others wait in", ranks_word(alive_missing).c_str(),
                             alive_missing.size() == 1 ? "has" : "have", what.c_str(), sig.c_str());
      text += ": a rank that skips a collective (inside an if on the rank?), is still busy elsewhere, or waits on "
              "something else. Everyone waits for it (CCLAB_TIMEOUT=S ends the waits)";
      verdict(false, 0, text, 4);
    }
    if (!gone.empty())
      verdict(false, 0, string_printf("%s %s far past %s: its record of it is gone", ranks_word(gone).c_str(),
                            gone.size() == 1 ? "is" : "are", what.c_str()),
              5);
  }

  // 3. Where the waits lead: follow each stuck rank's oldest wait to the peer it waits for.
  if (!stuck_ranks.empty()) {
    auto next_of = [&](int r) -> int {
      const BoardWait* oldest = nullptr;
      for (const BoardWait* w : waits[r])
        if (oldest == nullptr || w->since_us < oldest->since_us) oldest = w;
      return oldest ? oldest->peer : -1;
    };
    const int start = stuck_ranks[0];
    std::vector<int> path{start};
    std::vector<int> seen(n, -1);
    seen[start] = 0;
    for (int r = next_of(start); r >= 0 && r < n; r = next_of(r)) {
      if (seen[r] >= 0) {
        std::string cyc;
        for (size_t i = static_cast<size_t>(seen[r]); i < path.size(); ++i) cyc += std::to_string(path[i]) + " -> ";
        verdict(false, 0, string_printf("a cycle of waits: %s%d (each waits for the next; no rank outside it can end it)", cyc.c_str(), r), 6);
        break;
      }
      seen[r] = static_cast<int>(path.size());
      path.push_back(r);
      if (waits[r].empty()) {
        std::string chain;
        for (int p : path) chain += (chain.empty() ? "" : " -> ") + std::to_string(p);
        verdict(false, 0, string_printf("the waits lead to rank %d (%s), which waits for nobody", r, chain.c_str()), 7);
        break;
      }
    }
  }
  if (verdicts.empty()) verdicts.push_back(v.stuck ? "ranks wait, but no rank is missing or mismatched" : "no rank is stuck");
  if (v.summary.empty()) v.summary = verdicts[0];
  v.lines.push_back("verdict: " + verdicts[0]);
  for (size_t i = 1; i < verdicts.size(); ++i) v.lines.push_back("   also: " + verdicts[i]);
  return v;
}

}  // namespace cclab

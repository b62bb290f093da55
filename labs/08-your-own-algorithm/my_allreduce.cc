// labs/08-your-own-algorithm/my_allreduce.cc - your all_reduce (lab 8, README.md). Edit this file.
//
// As it is, it is correct but slow: a "star". Every rank sends its share to rank 0, rank 0 adds them up
// one after another and sends the sum back to each rank in turn. Rank 0's link carries 2(n-1) buffers
// while the others idle. Replace it with recursive halving-doubling (the TODOs), and keep the name
// MyAllReduce: the grader runs NCCL_ALGO=MyAllReduce.
//
// Build and run it yourself (the grader does the same, `cclab lab check 08`):
//   cclab lab run 08 --ranks 5                                 # host backend, byte-checked
//   cclab lab run 08 --sim dgx-h100:4                          # race it against Ring in the simulator
#include "kernels/custom.h"

struct MyAllReduce {
  static constexpr const char* kName = "MyAllReduce";

  // The collectives it runs: all_reduce (nullptr means "yes"); any other gets NCCL's algorithms.
  static const char* supports(cclab::CollKind coll, const cclab::CustomTopo&) {
    return coll == cclab::CollKind::kAllReduce ? nullptr : "an all_reduce only";
  }

  // The ranks `rank` exchanges data with. The star: rank 0 with everyone, everyone with rank 0.
  // TODO 2: recursive halving-doubling's partners (and, when nranks is not a power of two, the partner
  //         of the pairing step). Both ends must list each other.
  static int peers(const cclab::CustomTopo& t, int rank, int* out, int max) {
    int n = 0;
    if (rank == 0) {
      for (int q = 1; q < t.nranks && n < max; ++q) out[n++] = q;
    } else {
      out[n++] = 0;
    }
    return n;
  }

  // One rank's part on one channel: the elements [r.lo, r.hi) of the buffer. CCLAB_HD (nothing under g++)
  // lets this file also build into the CUDA backend; mark helper functions run() calls with it too.
  template <class P>
  CCLAB_HD static void run(P& p) {
    const int n = p.nranks(), me = p.rank();
    const cclab::Range r = p.channel_range();
    // TODO 1: recursive halving (reduce-scatter): log2(n) exchanges, each with the partner at distance
    //         n/2, n/4, ..., 1 (rank ^ d), halving the range a rank is responsible for;
    // TODO 3: recursive doubling (all-gather): the same partners in reverse, doubling it back;
    // TODO 4: nranks that are not a power of two (3, 5, 6, 7 ...): pair up the first 2*(n - p2) ranks first.
    // The star, for now:
    if (me == 0) {
      for (int q = 1; q < n && !p.aborted(); ++q)  // output = input + each rank's buffer, one at a time
        p.recv_reduce(q, q == 1 ? cclab::in_at(r.lo) : cclab::out_at(r.lo), r.lo, r.size(), q == n - 1);
      if (n == 1) p.copy(cclab::in_at(r.lo), r.lo, r.size());
      for (int q = 1; q < n && !p.aborted(); ++q) p.send(q, cclab::out_at(r.lo), r.size());
    } else {
      p.send(0, cclab::in_at(r.lo), r.size());
      p.recv(0, r.lo, r.size());
    }
  }
};

CCLAB_CUSTOM_ALGORITHM(MyAllReduce)

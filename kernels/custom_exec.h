// kernels/custom_exec.h - an executor's ExecVTable (kernels/custom.h), so that the host executor and the
// simulator's run a custom algorithm's schedule with their own waits, posts, data loops and wires. Host
// code only: included by the executors that load plugins, not by a schedule.
#pragma once

#include <string>
#include <type_traits>

#include "kernels/custom.h"

namespace cclab {

// The context a custom schedule's calls reach: the executor, and what stopped the schedule if it made a
// call the runtime cannot run.
template <typename Exec>
struct CustomExecCtx {
  Exec* exec;
  std::string failure;  // set by ExecVTable::fail
};

template <typename Exec>
const ExecVTable* custom_exec_vtable() {
  using Ctx = CustomExecCtx<Exec>;
  static const ExecVTable vt{
      [](void* c, const ConnCounter* k, uint64_t target, const WaitSite& site) {
        return static_cast<Ctx*>(c)->exec->wait_ge(k, target, site);
      },
      [](void* c, ConnCounter* k, uint64_t value) { static_cast<Ctx*>(c)->exec->post(k, value); },
      [](void* c, int type, const RedOpArg& arg, void* d0, void* d1, const void* a, const void* b, size_t n, bool pre,
         bool post) {
        Exec* ex = static_cast<Ctx*>(c)->exec;
        with_custom_type(type, [&](auto* tag) {
          using T = std::remove_pointer_t<decltype(tag)>;
          const RedOp<T> op(arg);
          ex->reduce_copy(op, static_cast<T*>(d0), static_cast<T*>(d1), static_cast<const T*>(a),
                          static_cast<const T*>(b), n, pre, post);
        });
      },
      [](void* c, const ConnInfo& send, size_t bytes) { static_cast<Ctx*>(c)->exec->wire(send, bytes); },
      [](void* c, const WaitSite& site, size_t expected, int32_t got) {
        return static_cast<Ctx*>(c)->exec->size_mismatch(site, expected, got);
      },
      [](void* c) { return static_cast<Ctx*>(c)->exec->observing(); },
      [](void* c) { return static_cast<Ctx*>(c)->exec->now_us(); },
      [](void* c, const StepRecord& r) { static_cast<Ctx*>(c)->exec->observe(r); },
      [](void* c, const char* message) {
        Ctx* x = static_cast<Ctx*>(c);
        if (x->failure.empty()) x->failure = message;
      },
  };
  return &vt;
}

}  // namespace cclab

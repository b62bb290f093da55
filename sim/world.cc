// sim/world.cc - one simulation: setup (model, channels, platform, routes), the executor, and the
// collectives run as actors.
#include "sim/world.h"

#include <simgrid/s4u.hpp>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include "kernels/collectives.h"
#include "kernels/custom_exec.h"
#include "kernels/describe.h"
#include "kernels/dtypes.h"

namespace sg4 = simgrid::s4u;

namespace cclab {
namespace sim {

void SimConn::Free::operator()(char* p) const {
  if (mapped != 0)
    munmap(p, mapped);
  else
    std::free(p);
}

// ---- SimExec ------------------------------------------------------------------------------------

SimExec::SimExec(World* world, int rank, int channel, int proto)
    : world_(world), rank_(rank), channel_(channel), proto_(proto), payload_(world->payload()) {}

SimExec::~SimExec() = default;

void SimExec::apply_post(ConnCounter* c, uint64_t value) {
  c->value = value;
  if (counting_ != nullptr) {
    record(ReplayKind::kPost, c->waiters, value);
    return;
  }
  CounterWait& w = world_->wait_slot(c);
  if (w.actor != nullptr && value >= w.target) {
    sg4::Actor* a = w.actor;
    w.actor = nullptr;
    if (world_->block_hooks() != nullptr) world_->block_hooks()->woken();
    a->resume();
  }
}

// The step's pending data loop starts: on one SM (one core of the GPU host), concurrently with its
// transfers (the SM is what stores the data into the peer's FIFO); recorded on the flow level.
void SimExec::start_loop() {
  if (pending_bytes_ <= 0) return;
  // The protocol's loop reaches loop_share of the SM's copy rate: it costs bytes / share at that rate.
  // A straggler's loop (--straggler) takes its factor longer.
  const double bytes = pending_bytes_ / world_->calibration().loop_share[proto_] * world_->straggle(rank_);
  pending_bytes_ = 0;
  last_dst_ = nullptr;
  if (rec_ != nullptr) {
    record(ReplayKind::kExec, 0, static_cast<uint64_t>(bytes));
    rec_inflight_ = true;
    return;
  }
  inflight_.push_back(sg4::this_actor::exec_async(bytes));
  inflight_xfer_.emplace_back();
}

// The step completes: its data loop and transfers end, then its overhead passes if it sent, then its
// deferred posts happen. One sequence for both back ends, so the flow level's recording is what the
// step level does.
void SimExec::flush() {
  if (counting_ != nullptr && counted_only()) return;
  start_loop();
  if (rec_ != nullptr) {
    // A switch step also pays nvls_step_us (ReplayTask::switch_overhead), as below.
    if (rec_inflight_ || sent_) record(sent_ ? ReplayKind::kFlushOv : ReplayKind::kFlush, 0, switch_step_ ? 1 : 0);
    rec_inflight_ = false;
    switch_step_ = false;
  } else {
    for (size_t i = 0; i < inflight_.size(); ++i) {
      try {
        inflight_[i]->wait();
      } catch (const simgrid::Exception&) {  // a link of its route went down (--fail)
        link_down(inflight_xfer_[i]);
      }
    }
    inflight_.clear();
    inflight_xfer_.clear();
    double ov = world_->calibration().step_overhead_us[proto_];
    if (switch_step_) ov += world_->calibration().nvls_step_us;
    switch_step_ = false;
    const Degradation& dg = world_->cfg_.degrade;
    if (sent_ && dg.jitter_pct > 0 && sg4::Engine::get_clock() * 1e6 >= dg.jitter_from_us)  // --jitter: this transfer's noise, from the seed and its own counters
      ov += step_latency_us_ * dg.jitter_pct / 100 *
            jitter_unit(dg.jitter_seed, world_->op_count_, (static_cast<uint64_t>(rank_) << 20) ^ static_cast<uint32_t>(channel_),
                        jitter_n_++);
    step_latency_us_ = 0;
    if (failure_ == SimFailure::kLinkDown) deferred_.clear();  // nothing arrived: post nothing
    if (sent_ && ov > 0 && failure_ == SimFailure::kNone) sg4::this_actor::sleep_for(ov * 1e-6);
  }
  sent_ = false;
  if (!deferred_.empty()) {
    // Copy first: resuming a waiter does not run it now (actors are coroutines), but keep the loop
    // independent of what apply_post may do to the vector.
    std::vector<std::pair<ConnCounter*, uint64_t>> posts;
    posts.swap(deferred_);
    for (auto& p : posts) apply_post(p.first, p.second);
  }
}

bool SimExec::wait_ge(const ConnCounter* c, uint64_t target, const WaitSite& site) {
  if (counting_ != nullptr) {
    flush();
    if (rec_ != nullptr) record(ReplayKind::kWait, c->waiters, target);
    return true;
  }
  flush();
  if (failure_ != SimFailure::kNone) return false;
  const auto aborted = [&] {  // a failed link aborted the collective: this wait would never end
    if (!world_->aborted() || c->value >= target) return false;
    failure_ = SimFailure::kAborted;
    site_ = site;
    return true;
  };
  if (aborted()) {
    world_->note_stuck(site);
    return false;
  }
  while (c->value < target) {
    CounterWait& w = world_->wait_slot(c);
    w.actor = sg4::Actor::self();
    w.target = target;
    w.site = site;
    if (world_->block_hooks() != nullptr) {
      world_->block_hooks()->blocked();  // may start more actors (a simcall: others run meanwhile)
      if (world_->wait_slot(c).actor == nullptr) continue;  // posted meanwhile: already counted as woken
    }
    sg4::this_actor::suspend();
    if (aborted()) return false;  // abort_run named it
  }
  return true;
}

void SimExec::post(ConnCounter* c, uint64_t value) {
  if (counting_ != nullptr && rec_ == nullptr) return;
  if (inflight_.empty() && !rec_inflight_ && pending_bytes_ == 0 && !sent_) {
    apply_post(c, value);
    return;
  }
  deferred_.emplace_back(c, value);
}

void SimExec::wire(const ConnInfo& send, size_t payload_bytes) {
  const double bytes = wire_bytes(proto_, payload_bytes);
  if (counting_ != nullptr) {
    tally(send.peer, bytes);
    if (counted_only()) return;
  }
  sent_ = true;
  if (bytes <= 0) return;
  start_loop();
  if (rec_ != nullptr) {
    record(ReplayKind::kXfer, static_cast<uint32_t>(send.peer), static_cast<uint64_t>(bytes));
    rec_inflight_ = true;
    return;
  }
  const World::ConnRoute& route = world_->conn_route(send);
  inflight_.push_back(sg4::Comm::sendto_async(route.src, route.dst, static_cast<uint64_t>(bytes)));
  inflight_xfer_.push_back(InflightXfer{&route, send.peer, send.step});
  if (route.links != nullptr && world_->cfg_.degrade.jitter_pct > 0) {
    double lat = 0;
    for (int l : *route.links) lat += world_->topo_.links[l].latency_us;
    step_latency_us_ = std::max(step_latency_us_, lat);
  }
  world_->add_link_bytes(route, bytes);
  ++transfers_;
}

void SimExec::nvls_switch(double up, double down, double reduce, double others_up, double others_down) {
  if (counting_ != nullptr) {
    // The flow level: the switch's three parts are connections of their own (Count's SwitchPart), which
    // flow.cc routes over the head's links to the switch and the switch host's ports; the others' bytes
    // only count on their links.
    const int n = world_->nranks();
    double part[kSwitchParts];
    part[kSwitchUp] = up;
    part[kSwitchDown] = down;
    part[kSwitchReduce] = reduce;
    part[kSwitchOthersUp] = others_up;
    part[kSwitchOthersDown] = others_down;
    for (int k = 0; k < kSwitchParts; ++k)
      if (part[k] > 0) tally(n + k, part[k]);
    if (counted_only()) return;
    sent_ = true;
    switch_step_ = true;
    start_loop();
    for (int k = 0; k < kSwitchFlows; ++k)
      if (part[k] > 0) record(ReplayKind::kXfer, static_cast<uint32_t>(n + k), static_cast<uint64_t>(part[k]));
    rec_inflight_ = true;
    return;
  }
  sent_ = true;
  switch_step_ = true;
  start_loop();
  sg4::Host* sw = world_->nvswitch_host(rank_);
  sg4::Host* gpu = world_->rank_host(rank_);
  if (sw == nullptr) return;
  if (up > 0) {
    inflight_.push_back(sg4::Comm::sendto_async(gpu, sw, static_cast<uint64_t>(up)));
    inflight_xfer_.push_back(InflightXfer{nullptr, kToSwitch, 0});
    world_->add_nvswitch_bytes(rank_, true, up);
    ++transfers_;
  }
  if (down > 0) {
    inflight_.push_back(sg4::Comm::sendto_async(sw, gpu, static_cast<uint64_t>(down)));
    inflight_xfer_.push_back(InflightXfer{nullptr, kFromSwitch, 0});
    world_->add_nvswitch_bytes(rank_, false, down);
    ++transfers_;
  }
  if (reduce > 0) {
    inflight_.push_back(sg4::Exec::init()->set_flops_amount(reduce)->set_host(sw)->start());
    inflight_xfer_.emplace_back();
  }
  if (others_up > 0) world_->add_nvls_others_bytes(rank_, true, others_up);
  if (others_down > 0) world_->add_nvls_others_bytes(rank_, false, others_down);
}

// A transfer failed: the collective cannot complete. Name it, and abort every wait of the run.
void SimExec::link_down(const InflightXfer& x) {
  if (failure_ == SimFailure::kNone) {
    failure_ = SimFailure::kLinkDown;
    site_ = WaitSite{rank_, channel_, x.peer, x.step, false, PrimKind::kSend};
  }
  char buf[160];
  if (x.route != nullptr) {
    snprintf(buf, sizeof buf, "rank %d channel %d: its transfer to rank %d (step %llu) failed at %.3f us: ", rank_,
             channel_, x.peer, static_cast<unsigned long long>(x.step), sg4::Engine::get_clock() * 1e6);
    world_->abort_run(buf + world_->failed_links_on(*static_cast<const World::ConnRoute*>(x.route)));
    return;
  }
  // NVLS: a transfer between this rank's GPU and its NVSwitch (or, where nothing else can fail, its data loop).
  const bool to = x.peer != kFromSwitch;
  snprintf(buf, sizeof buf, "rank %d channel %d: its NVLS transfer %s the NVSwitch failed at %.3f us: ", rank_, channel_,
           to ? "to" : "from", sg4::Engine::get_clock() * 1e6);
  sg4::Host* gpu = world_->rank_host(rank_);
  sg4::Host* sw = world_->nvswitch_host(rank_);
  world_->abort_run(buf + (sw == nullptr ? std::string("a link of its route is down")
                                         : world_->failed_links_between(to ? gpu : sw, to ? sw : gpu)));
}

bool SimExec::size_mismatch(const WaitSite& site, size_t expected, int32_t got) {
  if (counting_ != nullptr) return false;  // nobody sent anything: the counting pass runs ranks one by one
  failure_ = SimFailure::kSizeMismatch;
  site_ = site;
  mismatch_expected_ = expected;
  mismatch_got_ = got;
  return true;
}

bool SimExec::observing() const { return counting_ == nullptr && world_->recording(); }

double SimExec::now_us() {
  if (counting_ != nullptr) return 0;
  flush();
  return sg4::Engine::get_clock() * 1e6;
}

void SimExec::observe(const StepRecord& r) { world_->record(r); }

// ---- World --------------------------------------------------------------------------------------

namespace {

// A stand-in address for buffers that timing-only mode never touches (the schedules only do offset
// arithmetic on them).
char* phantom() { return reinterpret_cast<char*>(uintptr_t{1} << 24); }

bool per_rank_count(CollKind c) { return c == CollKind::kAllGather || c == CollKind::kReduceScatter; }

}  // namespace

World::~World() = default;

bool build_model(const SimConfig& cfg, Topology* topo, std::string* error) {
  std::string err;
  // Model.
  if (!cfg.topo_xml.empty()) {
    if (!read_topology_xml(cfg.topo_xml, topo, &err)) {
      *error = err;
      return false;
    }
    if (cfg.machines > 1 && !replicate_machines(topo, cfg.machines, cfg.fabric, &err)) {
      *error = err;
      return false;
    }
  } else {
    std::string preset = cfg.topo;
    int machines = cfg.machines;
    if (preset.find(':') != std::string::npos) {
      int m = 1;
      if (!parse_topo_spec(cfg.topo, &preset, &m, &err)) {
        *error = err;
        return false;
      }
      if (cfg.machines > 1 && m != cfg.machines) {
        *error = "topology " + cfg.topo + " names " + std::to_string(m) + " machines but " +
                 std::to_string(cfg.machines) + " were asked";
        return false;
      }
      machines = m;
    }
    if (!make_preset_topology(preset, std::max(1, machines), cfg.fabric, topo, &err)) {
      *error = err;
      return false;
    }
  }
  if (!apply_what_if(cfg.what_if, topo, &err)) {
    *error = err;
    return false;
  }
  return true;
}

bool World::setup(sg4::Engine& engine, std::string* error) {
  std::string err;
  if (!build_model(cfg_, &topo_, error)) return false;
  const int ngpus = static_cast<int>(topo_.gpus().size());
  nranks_ = !devs_.empty() ? static_cast<int>(devs_.size()) : cfg_.nranks > 0 ? cfg_.nranks : ngpus;
  if (nranks_ > ngpus) {
    *error = "ranks: " + std::to_string(nranks_) + " asked but the model has " + std::to_string(ngpus) + " GPUs";
    return false;
  }
  place_ = place_ranks(topo_, nranks_);
  if (!devs_.empty()) {
    const int gpm = std::max(1, topo_.gpus_per_machine());
    std::vector<bool> taken(ngpus, false);
    for (int r = 0; r < nranks_; ++r) {
      const int d = devs_[r];
      if (d < 0 || d >= ngpus || taken[d]) {
        *error = "rank " + std::to_string(r) + " plays GPU " + std::to_string(d) + ", which " +
                 (d < 0 || d >= ngpus ? "the model does not have (it has " + std::to_string(ngpus) + " GPUs)"
                                      : std::string("another rank of the communicator plays already"));
        return false;
      }
      taken[d] = true;
      place_.rank_machine[r] = d / gpm;
      place_.rank_dev[r] = d % gpm;
    }
  }
  nmachines_ = static_cast<int>(place_.machines().size());
  for (int r = 0; r < nranks_; ++r) {
    const int g = topo_.gpu_node(place_.rank_machine[r], place_.rank_dev[r]);
    topo_.nodes[g].rank = r;
  }
  // Rings and trees, as the runtime builds them.
  if (!search_ring_and_tree(topo_, &ring_graph_, &tree_graph_, &err)) {
    *error = err;
    return false;
  }
  nch_ = modelled_channels(ring_graph_, tree_graph_, cfg_.min_channels > 0 ? cfg_.min_channels : 1,
                           cfg_.max_channels > 0 ? cfg_.max_channels : 64);
  plan_ = plan_channels(topo_, ring_graph_, tree_graph_, place_, nch_);
  // Ring views: each channel's ring twice over, so rank r's view starts at its position.
  ring2_.assign(nch_, {});
  ring_pos_.assign(nch_, std::vector<int>(nranks_));
  for (int c = 0; c < nch_; ++c) {
    const std::vector<int>& ring = plan_[c].ring;
    ring2_[c] = ring;
    ring2_[c].insert(ring2_[c].end(), ring.begin(), ring.end());
    for (int i = 0; i < nranks_; ++i) ring_pos_[c][ring[i]] = i;
  }
  TunerInput in = make_tuner_input(topo_, ring_graph_, tree_graph_, place_, nch_);
  // An algorithm name from a plugin (graph/custom_algo.h) runs the collectives it supports.
  custom_ = custom_algo_for_env(cfg_.algo, &err);
  if (!err.empty()) {
    *error = err;
    return false;
  }
  if (custom_ != nullptr) {
    custom_topo_.nranks = nranks_;
    custom_topo_.nnodes = nmachines_;
    custom_topo_.ranks_per_node = nranks_ % std::max(1, nmachines_) == 0 ? nranks_ / std::max(1, nmachines_) : 0;
    for (int r = 0; r < nranks_ && custom_topo_.ranks_per_node > 0; ++r)
      if (place_.rank_machine[r] != r / custom_topo_.ranks_per_node) custom_topo_.ranks_per_node = 0;
    if (!custom_all_peers(*custom_, custom_topo_, &custom_peers_, &err)) {
      *error = err;
      return false;
    }
  } else if (!cfg_.algo.empty() && parse_algo_env(cfg_.algo.c_str(), &in.enable, &err) != ncclSuccess) {
    if (getenv("CCLAB_ALGO_PLUGIN") != nullptr) err += " (custom algorithms: " + custom_algo_names() + ")";
    *error = err;
    return false;
  }
  if (!cfg_.proto.empty() && parse_proto_env(cfg_.proto.c_str(), &in.enable, &err) != ncclSuccess) {
    *error = err;
    return false;
  }
  // PXN for point-to-point sends between machines (p2p_end): NCCL_P2P_PXN_LEVEL (0 off, 1 "if needed",
  // 2 the default: Topology::pxn_via), NCCL_PXN_DISABLE=1 (default 0) turns it off whatever the level.
  pxn_level_ = 2;
  bool pxn_disabled = false;
  if (const char* v = getenv("NCCL_PXN_DISABLE")) {
    if (std::string(v) != "0" && std::string(v) != "1") {
      *error = std::string("NCCL_PXN_DISABLE=\"") + v + "\": valid values are 0 (PXN on) and 1 (off)";
      return false;
    }
    pxn_disabled = std::string(v) == "1";
  }
  if (const char* v = getenv("NCCL_P2P_PXN_LEVEL")) {
    const std::string s(v);
    if (s != "0" && s != "1" && s != "2") {
      *error = "NCCL_P2P_PXN_LEVEL=\"" + s + "\": valid values are 0 (no PXN), 1 (the peer's rail NIC where this " +
               "GPU reaches it within PCIe switches or through a GPU's NVLink as NCCL's PXN path) and 2 (the " +
               "default: through the NVLink of the GPU local to the peer's rail NIC)";
      return false;
    }
    pxn_level_ = s[0] - '0';
  }
  if (pxn_disabled) pxn_level_ = 0;
  // NCCL_CROSS_NIC=0 (ncclTopoGetNetDev): a point-to-point send that takes no PXN relay still leaves by
  // the peer's rail NIC, straight from the GPU (the search's own reading: graph/search.cc).
  {
    const char* v = getenv("NCCL_CROSS_NIC");
    p2p_rail_nic_ = v != nullptr && std::string(v) == "0";
  }
  // NVLS where the model has it (NCCL_NVLS_ENABLE, default 2): the switch hosts join the platform before
  // it is sealed, by the world that builds it; a world on a shared platform (session.cc: another GPU set
  // of CCLAB_BACKEND=sim) runs NVLS where that world added them. A custom algorithm's world offers the
  // tuner Ring and Tree beside it.
  {
    int64_t enable = 2;
    if (const char* v = getenv("NCCL_NVLS_ENABLE")) {
      char* end = nullptr;
      enable = std::strtoll(v, &end, 10);
      if (end == v || *end != '\0' || enable < 0 || enable > 2) {
        *error = std::string("NCCL_NVLS_ENABLE=\"") + v + "\": valid values are 0 (off), 1 (on), 2 (automatic)";
        return false;
      }
    }
    if (const char* v = getenv("NCCL_NVLS_CHUNKSIZE")) {
      const long long b = std::atoll(v);
      if (b < 512 || b % 512 != 0 || b > (1 << 30)) {
        *error = std::string("NCCL_NVLS_CHUNKSIZE=") + v + ": it must be a multiple of 512 bytes, 512 B to 1 GiB";
        return false;
      }
      nvls_step_bytes_ = static_cast<int>(b);
    }
    if (enable == 0 || custom_ == nullptr) {
      add_nvls(topo_, enable, &nvls_graph_, &in, 0, cfg_.min_channels, cfg_.max_channels);
      for (int m : place_.machines())
        if (in.nvls != nullptr && shared_platform_ != nullptr && shared_platform_->nvswitch_host(m) == nullptr) {
          in.nvls = nullptr;
          in.nvls_why = "the simulated platform was built without the NVSwitch's reducing hosts (the first "
                        "communicator's world adds them where it runs NVLS)";
        }
      if (in.nvls != nullptr) {
        std::string why;
        if (!nvls_setup(&why)) {
          in.nvls = nullptr;
          in.nvls_why = why;
        }
      }
      nvls_ = in.nvls != nullptr;
      nvls_tree_ = nvls_ && nmachines_ > 1;
      int64_t tree_max = -2;
      if (const char* v = getenv("NCCL_NVLSTREE_MAX_CHUNKSIZE")) tree_max = std::atoll(v);
      if (tree_max != -2 && (tree_max < 512 || tree_max % 512 != 0 || tree_max > (1 << 30))) {
        *error = std::string("NCCL_NVLSTREE_MAX_CHUNKSIZE=") + std::to_string(tree_max) +
                 ": it must be a multiple of 512 bytes, 512 B to 1 GiB";
        return false;
      }
      nvls_tree_max_chunk_ = nvls_tree_max_chunk(nmachines_, nvls_step_bytes_, static_cast<int>(tree_max));
    } else {
      in.nvls_why = "a custom algorithm's world runs Ring and Tree beside it";
    }
  }
  if (!tuner_.init(in, &err)) {
    *error = "tuner: " + err;
    return false;
  }
  // Platform and the routes the channels use.
  if (shared_platform_) {
    platform_ = shared_platform_;
  } else {
    std::unique_ptr<Platform> built;
    if (!Platform::build(engine, topo_, cfg_.calibration, &built, &err)) {
      *error = err;
      return false;
    }
    platform_ = std::move(built);
  }
  for (int m : place_.machines())
    if (nvls_ && !platform_->add_nvswitch(m, nvls_graph_.bw_intra * nvls_efficiency(tuner_.input().sm_min), &err)) {
      *error = err;
      return false;
    }
  rank_host_.resize(nranks_);
  rank_gpu_.resize(nranks_);
  sm_rate_.resize(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    rank_gpu_[r] = topo_.gpu_node(place_.rank_machine[r], place_.rank_dev[r]);
    rank_host_[r] = platform_->gpu_host(rank_gpu_[r]);
    sm_rate_[r] = cfg_.calibration.gpu(topo_.nodes[rank_gpu_[r]].sm).sm_copy_gbs * 1e9;
  }
  // Point-to-point channels per peer, as NCCL would run them on this model (graph/p2p_channels.h).
  p2p_ = cclab::p2p_channels(topo_, rank_gpu_, nch_, proto_buff_[kProtoSimple], cfg_.p2p_params);
  // The model's paths between the GPU pairs that talk, both ways (point-to-point operations between
  // ring and tree neighbours take them), and, on a small model, between every pair of GPUs.
  auto route = [&](int a, int b) {
    if (a == b || a < 0 || b < 0) return true;
    const Platform::End ga = p2p_end(a, b), gb = p2p_end(b, a), ea{rank_gpu_[a]}, eb{rank_gpu_[b]};
    if (shared_platform_) {  // declared by the world that built the platform
      if (!platform_->route(ga, eb).empty() && !platform_->route(gb, ea).empty()) return true;
      err = "no route between " + topo_.nodes[rank_gpu_[a]].name + " and " + topo_.nodes[rank_gpu_[b]].name +
            " was declared: a simulated world declares every GPU pair's route only on models of at most " +
            std::to_string(kAllRoutesMaxGpus) + " GPUs";
      return false;
    }
    return platform_->add_route(ga, eb, &err) && platform_->add_route(gb, ea, &err);
  };
  if (all_routes_ && !shared_platform_ && ngpus <= kAllRoutesMaxGpus) {
    // Every GPU pair, and, between machines, through every pair of NICs a channel of the graphs can
    // give its two ends (graph_net_dev): the worlds that share this platform (other GPU sets, other
    // placements on the same graphs) find the routes of their channels' connections declared.
    const std::vector<int> gpus = topo_.gpus();
    std::vector<std::pair<int, int>> nets;  // per GPU pair, (send NET dev, receive NET dev)
    for (int a : gpus)
      for (int b : gpus) {
        if (a == b) continue;
        if (!platform_->add_route(a, b, &err)) {
          *error = err;
          return false;
        }
        const int ma = topo_.nodes[a].machine, mb = topo_.nodes[b].machine;
        if (ma == mb) continue;
        int pxn_net = -1;  // point-to-point through PXN (any GPU of the machine may be the proxy's rank)
        const int via = topo_.pxn_via(a, b, &pxn_net, pxn_level_);
        if (pxn_net >= 0 && !platform_->add_route(Platform::End{a, pxn_net, via}, Platform::End{b}, &err)) {
          *error = err;
          return false;
        }
        const int rail = cross_nic_rail(a, b);  // NCCL_CROSS_NIC=0 without a relay
        if (rail >= 0 && (via >= 0 || pxn_net != rail) &&
            !platform_->add_route(Platform::End{a, rail, -1}, Platform::End{b}, &err)) {
          *error = err;
          return false;
        }
        nets.clear();
        for (const TopoGraph* g : {&ring_graph_, &tree_graph_})
          for (int gc = 0; gc < g->nchannels; ++gc)
            nets.emplace_back(graph_net_dev(*g, gc, topo_.nodes[a].dev), graph_net_dev(*g, gc, topo_.nodes[b].dev));
        std::sort(nets.begin(), nets.end());
        nets.erase(std::unique(nets.begin(), nets.end()), nets.end());
        for (const auto& nd : nets) {
          if (nd.first < 0 || nd.second < 0) continue;
          if (!platform_->add_route(Platform::End{a, topo_.net_node(ma, nd.first)},
                                    Platform::End{b, topo_.net_node(mb, nd.second)}, &err)) {
            *error = err;
            return false;
          }
        }
      }
  }
  // The pairs a point-to-point collective of run_sizes talks between (cfg.p2p).
  for (int r = 0; r < nranks_ && cfg_.p2p != P2pPattern::kNone; ++r) {
    bool ok = true;
    p2p_pattern(cfg_.p2p, r, nranks_, cfg_.root, 0, [&](bool send, int peer, size_t) {
      if (send && ok) ok = route(r, peer);
    });
    if (!ok) {
      *error = err;
      return false;
    }
  }
  for (int r = 0; r < static_cast<int>(custom_peers_.size()); ++r)
    for (int q : custom_peers_[r])
      if (r < q && !route(r, q)) {
        *error = err;
        return false;
      }
  for (int c = 0; c < nch_; ++c) {
    const std::vector<int>& ring = plan_[c].ring;
    for (int i = 0; i < nranks_; ++i) {
      const int r = ring[i], next = ring[(i + 1) % nranks_], up = plan_[c].tree[r].up;
      if (!route(r, next) || !route(r, up) || !declare_conn_route(c, r, next, &err) ||
          (up >= 0 && (!declare_conn_route(c, r, up, &err) || !declare_conn_route(c, up, r, &err)))) {
        *error = err;
        return false;
      }
    }
  }
  // PAT's peers at power-of-two distances, on every channel, when the tuner may pick it.
  const bool pat = nranks_ > 1 && (tuner_.enabled(CollKind::kAllGather, AlgoKind::kPat, ProtoKind::kSimple) ||
                                   tuner_.enabled(CollKind::kReduceScatter, AlgoKind::kPat, ProtoKind::kSimple));
  for (int c = 0; c < nch_ && pat; ++c)
    for (int r = 0; r < nranks_; ++r)
      for (int d = 0; d < pat_dims(nranks_); ++d) {
        const int q = pat_peer(r, nranks_, d, true);
        if (!route(r, q) || !declare_conn_route(c, r, q, &err) || !declare_conn_route(c, q, r, &err)) {
          *error = err;
          return false;
        }
      }
  // NVLS-Tree's tree links between the heads of a part, both ways on every channel, each through its
  // head's own NIC (NCCL's getNvlsNetDev: the NET whose local GPU the head is; the closest NIC here).
  for (int c = 0; c < nch_ && nvls_tree_; ++c)
    for (int r = 0; r < nranks_; ++r) {
      const int up = nvls_tree_links(nvls_g_, r, c).up;
      if (up < 0) continue;  // the root, or no head (only heads are in the trees)
      for (const auto& ab : {std::make_pair(r, up), std::make_pair(up, r)}) {
        // A pair Tree or Ring already connects on this channel keeps its route (one connection per peer).
        if (routes_.count(std::make_tuple(c, ab.first, ab.second))) continue;
        const Platform::End ea{rank_gpu_[ab.first], head_nic(ab.first)}, eb{rank_gpu_[ab.second], head_nic(ab.second)};
        if (!platform_->add_route(ea, eb, &err)) {
          *error = err;
          return false;
        }
        const auto hosts = platform_->route_hosts(ea, eb);
        routes_[std::make_tuple(c, ab.first, ab.second)] = ConnRoute{hosts.first, hosts.second, &platform_->route(ea, eb)};
      }
    }
  link_bytes_.assign(topo_.links.size(), 0.0);
  if (!setup_degradation(error)) return false;
  if (shared_platform_) return true;
  platform_->seal();
  return true;
}

std::pair<Platform::End, Platform::End> World::conn_ends(int c, int a, int b) const {
  Platform::End ea{rank_gpu_[a], -1}, eb{rank_gpu_[b], -1};
  const NetConn* k = c >= 0 && c < static_cast<int>(plan_.size()) ? plan_[c].net_of(a, b) : nullptr;
  if (k != nullptr) {
    ea.net = topo_.net_node(place_.rank_machine[a], k->send_net);
    eb.net = topo_.net_node(place_.rank_machine[b], k->recv_net);
  }
  return {ea, eb};
}

bool World::declare_conn_route(int c, int a, int b, std::string* error) {
  if (a == b || a < 0 || b < 0) return true;
  const auto ends = conn_ends(c, a, b);
  if (!shared_platform_ && !platform_->add_route(ends.first, ends.second, error)) return false;
  const auto hosts = platform_->route_hosts(ends.first, ends.second);
  if (hosts.first == nullptr) {
    *error = "channel " + std::to_string(c) + ": no route from " + topo_.nodes[rank_gpu_[a]].name + " to " +
             topo_.nodes[rank_gpu_[b]].name + " through the NICs its graph chose was declared: a simulated world " +
             "declares them for other worlds only on models of at most " + std::to_string(kAllRoutesMaxGpus) + " GPUs";
    return false;
  }
  routes_[std::make_tuple(c, a, b)] = ConnRoute{hosts.first, hosts.second, &platform_->route(ends.first, ends.second)};
  return true;
}

const World::ConnRoute& World::conn_route(int channel, int from, int to) {
  auto it = routes_.find(std::make_tuple(channel, from, to));
  if (it != routes_.end()) return it->second;
  if (channel != kP2pChannel) return conn_route(kP2pChannel, from, to);
  // Point-to-point (and anything setup did not declare): the model's path, when the platform has it,
  // through NCCL's PXN where it applies (p2p_end). Without one, the GPUs' hosts: SimGrid reports the
  // missing route when a communication takes it.
  const Platform::End a = p2p_end(from, to), b{rank_gpu_[to], -1};
  auto hosts = platform_->route_hosts(a, b);
  if (hosts.first == nullptr) hosts = {rank_host_[from], rank_host_[to]};
  return routes_.emplace(std::make_tuple(channel, from, to), ConnRoute{hosts.first, hosts.second, &platform_->route(a, b)})
      .first->second;
}

Platform::End World::p2p_end(int from, int to) const {
  Platform::End e{rank_gpu_[from], -1, -1};
  int net = -1;
  const int via = topo_.pxn_via(rank_gpu_[from], rank_gpu_[to], &net, pxn_level_);
  // NCCL's proxy on the intermediate GPU is a rank of the communicator: without one there, no PXN. Level 1
  // may take the peer's rail NIC with no intermediate GPU (a NIC within a's PCIe switches).
  if (via < 0 && net >= 0) e.net = net;
  if (via >= 0 && std::find(rank_gpu_.begin(), rank_gpu_.end(), via) != rank_gpu_.end()) e.net = net, e.via = via;
  if (e.net < 0) e.net = cross_nic_rail(rank_gpu_[from], rank_gpu_[to]);  // NCCL_CROSS_NIC=0, no relay
  return e;
}

int World::cross_nic_rail(int a, int b) const {
  if (!p2p_rail_nic_) return -1;
  const int rail = topo_.rail_net(a, b);
  return rail >= 0 && rail != topo_.exit_net(a) ? rail : -1;
}

const World::ConnRoute& World::conn_route(const ConnInfo& send) const {
  auto it = hdr_route_.find(send.hdr);
  return it == hdr_route_.end() ? no_route_ : *it->second;
}

void World::add_link_bytes(const ConnRoute& route, double bytes) {
  if (route.links == nullptr) return;
  for (int l : *route.links) link_bytes_[l] += bytes;
}

int World::head_nic(int rank) const {
  // The NET the NVLS search paired with the head's GPU (NCCL's getNvlsNetDev: graph->inter of the head's
  // channel): each head its own NIC, also where two GPUs share a PCIe switch with two NICs.
  for (const auto& gn : nvls_head_nets_)
    if (gn.first == place_.rank_dev[rank])
      for (int n : topo_.nets(place_.rank_machine[rank]))
        if (topo_.nodes[n].dev == gn.second) return n;
  const int g = rank_gpu_[rank];
  int best = -1, best_type = 1 << 30;
  for (int n : topo_.nets(place_.rank_machine[rank])) {
    const int t = static_cast<int>(topo_.path(g, n).type);
    if (t < best_type) best = n, best_type = t;
  }
  return best;
}

bool World::nvls_setup(std::string* why) {
  // As the runtime's (core/comm_topo.cc): each machine's ranks, its heads first (graph/search.h).
  NvlsGroups g;
  if (!nvls_groups(nvls_graph_, place_.rank_machine, place_.rank_dev, &g, why)) return false;
  nvls_head_nets_ = nvls_head_nets(topo_);
  nvls_g_ = std::move(g);
  return true;
}

NvlsConn& World::nvls_conn(int channel, int rank, int space) {
  NvlsChannel& m = nvls_mem_[std::make_pair(space, channel)];
  if (m.view.empty()) {
    // Every rank's region, anonymous zero pages (only the headers and the slots a run uses get memory);
    // each counter gets its wait slot. A group is the whole world (NVLS) or one machine (NVLS-Tree).
    const int gsize = static_cast<int>(nvls_g_.group[0].size());
    const size_t bytes = (nvls_region_bytes(nvls_g_.nheads, nvls_step_bytes_) + 4095) / 4096 * 4096;
    m.region.resize(nranks_);
    m.view.assign(nranks_, NvlsConn{});
    for (int r = 0; r < nranks_; ++r) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      m.region[r] = std::unique_ptr<char, SimConn::Free>(static_cast<char*>(p), SimConn::Free{bytes});
      for (int h = 0; h < nvls_g_.nheads; ++h)
        for (bool b : {false, true}) {
          ConnFifoHeader* hdr = reinterpret_cast<ConnFifoHeader*>(m.region[r].get() + nvls_fifo_off(h, b, nvls_step_bytes_));
          hdr->head.waiters = static_cast<uint32_t>(waits_.size());
          waits_.emplace_back();
          hdr->tail.waiters = static_cast<uint32_t>(waits_.size());
          waits_.emplace_back();
        }
    }
    for (int r = 0; r < nranks_; ++r) {
      NvlsConn& v = m.view[r];
      v.nranks = gsize;
      v.nheads = nvls_g_.nheads;
      v.rank = nvls_g_.index[r];
      v.step_bytes = nvls_step_bytes_;
      const std::vector<int>& members = nvls_g_.group[nvls_g_.group_of[r]];
      for (int q = 0; q < gsize; ++q) {
        v.uc[q] = m.region[members[q]].get();
        v.global[q] = members[q];
      }
      v.global_set = true;
    }
  }
  return m.view[rank];
}

void World::add_nvls_others_bytes(int head, bool up, double bytes) {
  const std::vector<int>& g = nvls_g_.group[nvls_g_.group_of[head]];
  for (size_t i = static_cast<size_t>(nvls_g_.nheads); i < g.size(); ++i) add_nvswitch_bytes(g[i], up, bytes);
}

sg4::Host* World::nvswitch_host(int rank) const {
  return nvls_ ? platform_->nvswitch_host(place_.rank_machine[rank]) : nullptr;
}

void World::add_nvswitch_bytes(int rank, bool up, double bytes) {
  // Spread over the GPU's NVLinks to the switch chips by their bandwidth, as the fabric sprays them.
  const std::vector<int>& links = platform_->nvswitch_links(rank_gpu_[rank], up);
  double total = 0;
  for (int l : links) total += topo_.links[l].bw;
  for (int l : links)
    if (total > 0) link_bytes_[l] += bytes * topo_.links[l].bw / total;
}

SimConn& World::conn(int channel, int from, int to, int proto, int space) {
  auto key = std::make_tuple(space, channel, from, to, proto);
  auto it = conns_.find(key);
  if (it != conns_.end()) return *it->second;
  auto c = std::make_unique<SimConn>();
  const size_t buff = static_cast<size_t>(proto_buff_[proto]);
  // Timing-only runs keep the header alone (128-byte aligned, its size a multiple of that); payload runs
  // the whole FIFO, page-aligned so the slots at kFifoDataOffset are too. A FIFO starts zeroed. Payload
  // FIFOs are anonymous mappings, zero pages until written, so a connection costs the slots it uses:
  // writing zeros over all of them made a 4 MiB TwoShot all_reduce on dgx-h100:2 (every pair of 16
  // GPUs connected on every channel) hold 12-24 GiB and die of the OOM killer beside other jobs.
  if (cfg_.payload) {
    const size_t bytes = (fifo_total_bytes(buff) + 4095) / 4096 * 4096;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    c->mem = std::unique_ptr<char, SimConn::Free>(static_cast<char*>(p), SimConn::Free{bytes});
  } else {
    const size_t align = alignof(ConnFifoHeader);
    const size_t bytes = (sizeof(ConnFifoHeader) + align - 1) / align * align;
    c->mem.reset(static_cast<char*>(std::aligned_alloc(align, bytes)));
    if (c->mem == nullptr) throw std::bad_alloc();
    std::memset(c->mem.get(), 0, bytes);
  }
  ConnFifoHeader* hdr = reinterpret_cast<ConnFifoHeader*>(c->mem.get());
  hdr->head.waiters = static_cast<uint32_t>(waits_.size());
  waits_.emplace_back();
  hdr->tail.waiters = static_cast<uint32_t>(waits_.size());
  waits_.emplace_back();
  char* data = cfg_.payload ? c->mem.get() + kFifoDataOffset : phantom() + (size_t{1} << 40);
  for (ConnInfo* ci : {&c->send_info, &c->recv_info}) {
    ci->hdr = hdr;
    ci->buff = data;
    ci->step_bytes = static_cast<int>(buff / kNcclSteps);
    ci->step = 0;
  }
  c->send_info.peer = to;
  c->recv_info.peer = from;
  hdr_route_[hdr] = &conn_route(channel, from, to);
  return *conns_.emplace(key, std::move(c)).first->second;
}

bool World::choose(CollKind coll, size_t bytes, Choice* c, std::string* error, bool scaling, SimType type,
                   RedOpKind op) const {
  // RedOpKind's first four are ncclRedOp_t's; ncclAvg arrives as kSumPostDiv or kPreMulSum (no NVLS).
  const TunerChoice t = tuner_.choose(coll, bytes, 1, !scaling,
                                      nvls_op_supported(coll, static_cast<int>(type), static_cast<int>(op)));
  // A custom algorithm runs what it supports with the Simple protocol on the channels the tuner gives
  // Ring/Simple for the collective (whatever protocol the tuner would pick for NCCL's algorithms, or
  // --proto says: it runs Simple either way); there is no NCCL cost model of it to predict with.
  if (custom_ != nullptr && nranks_ > 1 && custom_supports(*custom_, coll, custom_topo_, nullptr)) {
    const TunerChoice rs = tuner_.choose_combo(coll, bytes, AlgoKind::kRing, ProtoKind::kSimple);
    const TunerChoice& ct = rs.valid ? rs : t;
    c->algo = AlgoKind::kCustom;
    c->proto = kProtoSimple;
    c->nchannels = std::max(1, std::min(ct.valid ? ct.nchannels : nch_, nch_));
    c->predicted_us = 0;
    return true;
  }
  if (!t.valid || (t.algo != AlgoKind::kRing && t.algo != AlgoKind::kTree && t.algo != AlgoKind::kPat &&
                   !(t.algo == AlgoKind::kNvls && nvls_) && !(t.algo == AlgoKind::kNvlsTree && nvls_tree_))) {
    *error = std::string(coll_name(coll)) + ": no algorithm/protocol is available (algo '" + cfg_.algo +
             "', proto '" + cfg_.proto + "' leave none that cclab runs: Ring for every collective, Tree for AllReduce, "
             "PAT (Simple, one GPU per node or NCCL_PAT_ENABLE=1) for AllGather/ReduceScatter with no scaling "
             "reduction, NVLS on a modelled NVSwitch machine of sm90+)";
    return false;
  }
  c->algo = t.algo;
  c->proto = static_cast<int>(t.proto);
  c->nchannels = std::max(1, std::min(t.nchannels, nch_));
  c->nthreads = t.nthreads;
  c->predicted_us = t.time_us;
  return true;
}

std::string World::describe_failure(const SimExec& ex) const {
  const WaitSite& s = ex.failed_site();
  char buf[512];
  switch (ex.failure()) {
    case SimFailure::kSizeMismatch:
      snprintf(buf, sizeof buf,
               "rank %d channel %d expected %zu bytes from rank %d at step %llu but received %d: do all ranks call the "
               "operation with the same count and datatype?",
               s.rank, s.channel, ex.mismatch_expected(), s.peer, static_cast<unsigned long long>(s.step),
               ex.mismatch_got());
      return buf;
    case SimFailure::kFlagMissing:
      return "a line flag was not set after its step's doorbell (do all ranks call the same collective with the same "
             "count and datatype?): " + describe_wait(s);
    case SimFailure::kAborted:
      return "aborted while " + describe_wait(s);
    case SimFailure::kLinkDown:
      return abort_error();
    case SimFailure::kNone:
      break;
  }
  return "";
}

std::string World::describe_stuck() const {
  std::string out;
  int shown = 0;
  for (const CounterWait& w : waits_) {
    if (w.actor == nullptr) continue;
    if (shown++ < 8) out += "\n  " + describe_wait(w.site);
  }
  if (shown > 8) out += "\n  ... and " + std::to_string(shown - 8) + " more";
  return out;
}

CollWork World::work_for(CollKind coll, size_t count, size_t esize, int root, RedOpArg redop, const Choice& ch) const {
  const size_t total = count * esize * (per_rank_count(coll) ? static_cast<size_t>(nranks_) : 1);
  CollWork base{};
  base.coll = coll;
  base.count = count;
  base.root = root;
  base.nranks = nranks_;
  base.nchannels = ch.nchannels;
  base.proto = ch.proto;
  base.chunk_bytes = ch.algo == AlgoKind::kNvls ? nvls_chunk_bytes(total, ch.nchannels, nvls_g_.nheads, nvls_step_bytes_)
                     : ch.algo == AlgoKind::kNvlsTree
                         ? nvls_tree_chunk_bytes(total, ch.nchannels, nvls_g_.nheads,
                                                 nvls_step_bytes_, nvls_tree_max_chunk_)
                     : ch.algo == AlgoKind::kCustom ? ProtoSimpleRing::max_chunk_bytes(proto_buff_[ch.proto])
                     : ch.algo == AlgoKind::kPat ? pat_chunk_bytes(coll, proto_buff_[ch.proto], total, ch.nchannels)
                     : ch.algo == AlgoKind::kTree
                         ? tree_chunk_bytes(ch.proto, proto_buff_[ch.proto], total, ch.nchannels, nmachines_, nranks_)
                         : ring_chunk_bytes(coll, ch.proto, proto_buff_[ch.proto]);
  base.redop = redop;
  return base;
}

bool World::append_rank_tasks(const CollWork& w, SimType type, const Choice& ch, std::vector<Task>* tasks,
                              std::string* error, int space) {
  SimCollFn ring_fn = sim_coll_kernel(type);
  SimTreeFn tree_fn = sim_tree_kernel(type);
  if (ring_fn == nullptr || tree_fn == nullptr) {
    *error = std::string("type ") + sim_type_name(type) + " is not instantiated in the simulator";
    return false;
  }
  const int r = w.rank;
  for (int c = 0; c < ch.nchannels; ++c) {
    Task t;
    t.w = w;
    t.channel = c;
    t.ring_fn = ring_fn;
    t.tree_fn = tree_fn;
    t.ring = RingView{ring2_[c].data() + ring_pos_[c][r], nranks_};
    if (ch.algo == AlgoKind::kTree) t.tree = &plan_[c].tree[r];
    if (ch.algo == AlgoKind::kPat) {
      t.pat_fn = sim_pat_kernel(type);
      t.pconns.ndims = nranks_ > 1 ? pat_dims(nranks_) : 0;
      for (int d = 0; d < t.pconns.ndims; ++d) {
        const int down = pat_peer(r, nranks_, d, false), up = pat_peer(r, nranks_, d, true);
        t.pconns.send_down[d] = &conn(c, r, down, ch.proto, space).send_info;
        t.pconns.recv_down[d] = &conn(c, down, r, ch.proto, space).recv_info;
        t.pconns.send_up[d] = &conn(c, r, up, ch.proto, space).send_info;
        t.pconns.recv_up[d] = &conn(c, up, r, ch.proto, space).recv_info;
      }
    } else if (ch.algo == AlgoKind::kNvls || ch.algo == AlgoKind::kNvlsTree) {
      // NCCL's scatter, reduce, (NVLS-Tree: broadcast,) gather warps: an actor each, so that they overlap.
      t.nvls_fn = sim_nvls_kernel(type);
      t.nvls = &nvls_conn(c, r, space);
      t.nvls_start = *t.nvls;
      if (ch.algo == AlgoKind::kNvlsTree) {
        // The heads of this rank's part on the other machines: tree c % 2 of the double binary tree.
        // (A rank that is no head has no links: scatter and gather only.)
        const TreeLinks nt = nvls_tree_links(nvls_g_, r, c);
        t.nvls_tree = true;
        if (nt.up >= 0) {
          t.ntree.up_recv = &conn(c, nt.up, r, ch.proto, space).recv_info;
          t.ntree.up_send = &conn(c, r, nt.up, ch.proto, space).send_info;
        }
        for (int i = 0; i < nt.ndown; ++i) {
          const int d = nt.down[i];
          t.ntree.down_recv[t.ntree.ndown] = &conn(c, d, r, ch.proto, space).recv_info;
          t.ntree.down_send[t.ntree.ndown++] = &conn(c, r, d, ch.proto, space).send_info;
        }
      }
      for (int role : {kNvlsScatter, kNvlsReduce, kNvlsBcast}) {
        if (role == kNvlsBcast && (!t.nvls_tree || t.ntree.up_recv == nullptr)) continue;
        if (role == kNvlsReduce && t.nvls->rank >= t.nvls->nheads) continue;  // no head: no part to reduce
        Task s = t;
        s.nvls_role = role;
        tasks->push_back(s);
      }
      t.nvls_role = kNvlsGather;
    } else if (ch.algo == AlgoKind::kCustom) {
      t.custom = custom_;
      t.type = static_cast<int>(type);
      t.custom_send.assign(nranks_, nullptr);
      t.custom_recv.assign(nranks_, nullptr);
      for (int q : custom_peers_[r]) {
        t.custom_send[q] = &conn(c, r, q, ch.proto, space).send_info;
        t.custom_recv[q] = &conn(c, q, r, ch.proto, space).recv_info;
      }
    } else if (nranks_ > 1) {
      if (ch.algo == AlgoKind::kTree) {
        const TreeLinks& tl = plan_[c].tree[r];
        if (tl.up >= 0) {
          t.tconns.up_recv = &conn(c, tl.up, r, ch.proto, space).recv_info;
          t.tconns.up_send = &conn(c, r, tl.up, ch.proto, space).send_info;
        }
        t.tconns.ndown = tl.ndown;
        for (int i = 0; i < tl.ndown; ++i) {
          t.tconns.down_recv[i] = &conn(c, tl.down[i], r, ch.proto, space).recv_info;
          t.tconns.down_send[i] = &conn(c, r, tl.down[i], ch.proto, space).send_info;
        }
      } else {
        t.recv = &conn(c, t.ring.prev(), r, ch.proto, space).recv_info;
        t.send = &conn(c, r, t.ring.next(), ch.proto, space).send_info;
      }
    }
    tasks->push_back(t);
  }
  return true;
}

bool World::make_tasks(size_t count, const Choice& ch, std::vector<Task>* tasks, std::string* error) {
  const CollWork base = work_for(cfg_.coll, count, sim_type_size(cfg_.type), cfg_.root,
                                 RedOpArg{cfg_.op, 0, nranks_}, ch);
  const uint64_t op_count = op_count_++;
  tasks->clear();
  tasks->reserve(static_cast<size_t>(nranks_) * ch.nchannels);
  for (int r = 0; r < nranks_; ++r) {
    CollWork w = base;
    w.rank = r;
    w.op_count = op_count;
    if (cfg_.payload) {
      w.send = send_[r].data();
      w.recv = recv_[r].data();
    } else {
      w.send = phantom();
      w.recv = phantom() + (size_t{1} << 36);
    }
    if (!append_rank_tasks(w, cfg_.type, ch, tasks, error)) return false;
  }
  return true;
}

bool World::run_task(SimExec& ex, const Task& t) {
  if (t.custom != nullptr) {
    CustomExecCtx<SimExec> ctx{&ex, {}};
    const bool ok = t.custom->desc->run[t.type](custom_exec_vtable<SimExec>(), &ctx, t.w, t.channel, custom_topo_,
                                                t.custom_send.data(), t.custom_recv.data());
    if (!ctx.failure.empty()) t.custom_failure = "algorithm " + t.custom->name + ": " + ctx.failure;
    return ok && ctx.failure.empty();
  }
  if (t.local.bytes > 0) {  // a part of a send to itself: one data loop
    if (cfg_.payload && t.local.dst != t.local.src) memmove(t.local.dst, t.local.src, t.local.bytes);
    sg4::this_actor::execute(static_cast<double>(t.local.bytes) * straggle(t.w.rank));
    return true;
  }
  if (!t.p2p.empty()) {
    for (const P2pWork& w : t.p2p)
      if (!(t.p2p_send ? sim_p2p_send(ex, w, t.channel, t.send) : sim_p2p_recv(ex, w, t.channel, t.recv)))
        return false;
    return true;
  }
  if (t.pat_fn != nullptr)
    return t.pat_fn(ex, t.w, t.pconns, t.channel);
  if (t.nvls != nullptr) {
    // Every role counts the same steps from where the channel stood when the tasks were made (an actor may
    // run to its end before another of the same channel starts); the gather role keeps them.
    NvlsConn v = t.nvls_start;
    const bool ok = t.nvls_fn(ex, t.w, v, t.channel, t.nvls_role, t.nvls_tree ? &t.ntree : nullptr);
    if (t.nvls_role == kNvlsGather) {
      t.nvls->step_up = v.step_up;
      t.nvls->step_down = v.step_down;
    }
    return ok;
  }
  return t.tree != nullptr ? t.tree_fn(ex, t.w, *t.tree, t.tconns, t.channel)
                           : t.ring_fn(ex, t.w, t.ring, t.channel, t.recv, t.send);
}

bool World::run_tasks(std::vector<Task>& tasks, std::string* error, bool launched) {
  const double launch = launched ? 0.0 : cfg_.calibration.launch_us * 1e-6;
  std::string failure;
  std::vector<sg4::ActorPtr> actors;
  actors.reserve(tasks.size());
  // With block hooks: the caller counts as blocked while it joins, and the last task to end wakes it.
  size_t remaining = tasks.size();
  bool joining = false;
  for (Task& t : tasks) {
    if (hooks_ != nullptr) hooks_->spawned();
    actors.push_back(sg4::Actor::create("r" + std::to_string(t.w.rank) + "c" + std::to_string(t.channel),
                                        rank_host_[t.w.rank], [this, &t, &failure, &remaining, &joining, launch] {
                                          // NVLS's own fixed cost comes with its launch (calibration.h).
                                          const double start =
                                              launch + (t.nvls != nullptr ? cfg_.calibration.nvls_latency_us * 1e-6 : 0.0);
                                          if (start > 0) sg4::this_actor::sleep_for(start);
                                          SimExec ex(this, t.w.rank, t.channel, t.w.proto);
                                          const bool ok = run_task(ex, t);
                                          ex.flush();
                                          transfers_ += ex.transfers();
                                          if ((!ok || ex.failure() != SimFailure::kNone) && failure.empty()) {
                                            failure = t.custom_failure.empty() ? describe_failure(ex) : t.custom_failure;
                                            if (failure.empty())  // the schedule refused the work itself
                                              failure = "rank " + std::to_string(t.w.rank) + " channel " +
                                                        std::to_string(t.channel) + ": the schedule " +
                                                        (t.nvls != nullptr ? "(NVLS) " : "") +
                                                        "refused the operation";
                                          }
                                          if (hooks_ != nullptr) {
                                            if (--remaining == 0 && joining) hooks_->woken();
                                            hooks_->finished();
                                          }
                                        }));
  }
  if (hooks_ != nullptr && remaining > 0) {
    joining = true;
    hooks_->blocked();
  }
  for (auto& a : actors) a->join();
  if (aborted_) {
    *error = abort_error();
    return false;
  }
  if (!failure.empty()) {
    *error = failure;
    return false;
  }
  return true;
}

bool World::run_rank_op(int rank, const RankOp& op, std::string* error) {
  const size_t esize = sim_type_size(op.type);
  const size_t total = op.count * esize * (per_rank_count(op.coll) ? static_cast<size_t>(nranks_) : 1);
  Choice ch;
  if (!choose(op.coll, total, &ch, error, op.redop.kind == RedOpKind::kPreMulSum || op.redop.kind == RedOpKind::kSumPostDiv,
              op.type, op.redop.kind))
    return false;
  CollWork w = work_for(op.coll, op.count, esize, op.root, op.redop, ch);
  w.rank = rank;
  w.op_count = op.op_count;
  w.send = op.send;
  w.recv = op.recv;
  std::vector<Task> tasks;
  if (!append_rank_tasks(w, op.type, ch, &tasks, error, op.space)) return false;
  const double begin = sg4::Engine::get_clock() * 1e6;
  live_proto_ = ch.proto;
  if (!run_tasks(tasks, error)) return false;
  if (record_steps_ || live_) {  // one record per collective: the earliest begin, latest end over the ranks
    auto it = std::find_if(op_records_.begin(), op_records_.end(),
                           [&](const OpRecord& o) { return o.op_count == op.op_count && o.space == op.space; });
    const double end = sg4::Engine::get_clock() * 1e6;
    if (it == op_records_.end()) {
      op_records_.push_back(OpRecord{op.op_count, ch.algo, ch.proto, ch.nchannels, op.count, total, begin, end,
                                     op.coll, op.type, op.redop.kind, op.root, 0, op.space});
      it = op_records_.end() - 1;
    } else {
      it->begin_us = std::min(it->begin_us, begin);
      it->end_us = std::max(it->end_us, end);
    }
    if (++it->reports == nranks_) live_op(*it);
  }
  return true;
}

bool World::run_rank_p2p(int rank, int space, uint64_t op_count, const std::vector<P2pOp>& ops, std::string* error) {
  const int n = nranks_;
  std::vector<std::vector<const P2pOp*>> sends(n), recvs(n);
  for (const P2pOp& o : ops) {
    if (o.peer < 0 || o.peer >= n) {
      *error = "rank " + std::to_string(rank) + ": peer " + std::to_string(o.peer) + " is not a rank of the communicator";
      return false;
    }
    (o.send ? sends : recvs)[o.peer].push_back(&o);
  }
  // One kernel launch for the whole group. Round 0: to and from itself, a local copy matched in order,
  // split into parts as any send (NCCL plans the self-send like the others), one data loop each on an SM
  // of the rank's GPU, at the same time as the other rounds.
  if (cfg_.calibration.launch_us > 0) sg4::this_actor::sleep_for(cfg_.calibration.launch_us * 1e-6);
  if (sends[rank].size() != recvs[rank].size()) {
    *error = "rank " + std::to_string(rank) + ": " + std::to_string(sends[rank].size()) + " sends to itself but " +
             std::to_string(recvs[rank].size()) + " receives from itself in one group";
    return false;
  }
  std::vector<Task> tasks;  // run_tasks' actors: the local copy's parts, then every round's sending and receiving parts
  for (size_t i = 0; i < sends[rank].size(); ++i) {
    const P2pOp* sd = sends[rank][i];
    const P2pOp* rv = recvs[rank][i];
    if (sd->bytes != rv->bytes) {
      *error = "rank " + std::to_string(rank) + ": send of " + std::to_string(sd->bytes) +
               " bytes to itself meets a receive of " + std::to_string(rv->bytes) + " bytes";
      return false;
    }
    if (sd->bytes == 0) continue;
    const int np = p2p_nparts(p2p_, n, sd->bytes);
    for (int part = 0; part < np; ++part) {
      size_t beg = 0, end = 0;
      p2p_part_bounds(np, part, sd->bytes, &beg, &end);
      if (end == beg) continue;
      Task t;
      t.w.rank = rank;
      t.w.op_count = op_count;
      t.w.proto = kProtoSimple;
      t.channel = p2p_channel_for_part(p2p_, 0, part);
      t.local = Task::LocalCopy{static_cast<char*>(rv->buff) + beg, static_cast<const char*>(sd->buff) + beg, end - beg};
      tasks.push_back(std::move(t));
    }
  }
  // Round k: to send_to[k] and from recv_from[k] of NCCL's schedule (graph/p2p_channels.h p2p_schedule;
  // on one machine rank + k and rank - k). Each send or receive is split into parts on channels as
  // NCCL 2.28.9 splits it (kernels/p2p.h p2p_nparts: up to p2pnChannelsPerPeer parts), one actor per
  // part and direction: part j of every operation with that peer runs on the channel of part j. NCCL
  // puts every round of a group in one kernel (scheduleP2pTasksToPlan), each round on its own channels
  // (ncclP2pChannelBaseForRound), so all rounds' parts run at once here too; every part has its own
  // connection, so none waits for another.
  if (p2p_sched_.empty()) p2p_sched_.resize(n);
  if (p2p_sched_[rank].send_to.empty()) p2p_sched_[rank] = p2p_schedule(rank, place_.rank_machine, cfg_.p2p_params.sched_group);
  const P2pSchedule& sched = p2p_sched_[rank];
  for (int round = 1; round < n; ++round) {
    const int to = sched.send_to[round], from = sched.recv_from[round];
    if (sends[to].empty() && recvs[from].empty()) continue;
    for (int dir = 0; dir < 2; ++dir) {
      const std::vector<const P2pOp*>& list = dir == 0 ? sends[to] : recvs[from];
      if (list.empty()) continue;
      const int peer = dir == 0 ? to : from;
      int nparts = 1;
      for (const P2pOp* o : list) nparts = std::max(nparts, p2p_nparts(p2p_, n, o->bytes));
      for (int part = 0; part < nparts; ++part) {
        Task t;
        t.w.rank = rank;
        t.w.op_count = op_count;
        t.w.proto = kProtoSimple;
        t.channel = p2p_channel_for_part(p2p_, round, part);
        for (const P2pOp* o : list) {
          const int np = p2p_nparts(p2p_, n, o->bytes);
          if (part >= np) continue;
          size_t beg = 0, end = 0;
          p2p_part_bounds(np, part, o->bytes, &beg, &end);
          P2pWork w{static_cast<char*>(o->buff) + beg, end - beg, peer, rank, op_count};
          w.chunk = p2p_.chunk_bytes;
          w.total = o->bytes;
          t.p2p.push_back(w);
        }
        if (t.p2p.empty()) continue;
        SimConn& c = dir == 0 ? conn(kP2pChannel - t.channel, rank, to, kProtoSimple, space)
                              : conn(kP2pChannel - t.channel, from, rank, kProtoSimple, space);
        t.p2p_send = dir == 0;
        (dir == 0 ? t.send : t.recv) = dir == 0 ? &c.send_info : &c.recv_info;
        tasks.push_back(std::move(t));
      }
    }
  }
  if (!tasks.empty() && !run_tasks(tasks, error, /*launched=*/true)) return false;
  return true;
}

bool World::run_p2p_once(size_t bytes, double* time_us, std::string* error) {
  // Every rank issues the pattern's sends and receives of `bytes` per peer as one group, from its own
  // actor, as a CCLAB_BACKEND=sim program's ranks do (Session::enqueue_p2p -> run_rank_p2p).
  const uint64_t op_count = op_count_++;
  std::vector<std::vector<P2pOp>> ops(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    char* send = cfg_.payload ? reinterpret_cast<char*>(send_[r].data()) : phantom();
    char* recv = cfg_.payload ? reinterpret_cast<char*>(recv_[r].data()) : phantom() + (size_t{1} << 36);
    p2p_pattern(cfg_.p2p, r, nranks_, cfg_.root, bytes, [&](bool is_send, int peer, size_t offset) {
      ops[r].push_back(P2pOp{is_send, peer, (is_send ? send : recv) + offset, bytes});
    });
  }
  std::string failure;
  std::vector<sg4::ActorPtr> actors;
  const double start = sg4::Engine::get_clock();
  for (int r = 0; r < nranks_; ++r)
    actors.push_back(sg4::Actor::create("p2p" + std::to_string(r), rank_host_[r], [this, r, op_count, &ops, &failure] {
      std::string err;
      if (!run_rank_p2p(r, 0, op_count, ops[r], &err) && failure.empty()) failure = err;
    }));
  for (auto& a : actors) a->join();
  if (!failure.empty()) {
    *error = failure;
    return false;
  }
  *time_us = (sg4::Engine::get_clock() - start) * 1e6;
  return true;
}

bool World::run_once(size_t count, const Choice& ch, double* time_us, std::string* error) {
  std::vector<Task> tasks;
  if (!make_tasks(count, ch, &tasks, error)) return false;
  const double start = sg4::Engine::get_clock();
  if (!run_tasks(tasks, error)) return false;
  *time_us = (sg4::Engine::get_clock() - start) * 1e6;
  return true;
}

}  // namespace sim
}  // namespace cclab

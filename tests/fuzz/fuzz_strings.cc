// tests/fuzz/fuzz_strings.cc - the small parsers of users' text: NCCL_ALGO / NCCL_PROTO, CCLAB_TOPO
// ("PRESET[:N]"), PCI bus ids, integer parameters, NCCL's collective/algorithm/protocol names, `cclab perf`'s
// command line, and (with the visualiser) the curve files `cclab viz --curves` reads. The first byte
// picks the parser; the rest is its text (`cclab perf`: arguments separated by newlines).
//
// Properties: none crashes; a refusal says why; what a parser accepts round-trips where the format
// allows (a bus id printed and read again, an integer printed and read again); an accepted topology
// spec of a known preset builds; an accepted `cclab perf` command line gives a size sweep that starts
// at minbytes and grows strictly up to at most maxbytes.
#include <string>
#include <vector>

#include "fuzz.h"
#include "graph/algo_proto.h"
#include "graph/topo.h"
#include "base/param.h"
#include "perf_options.h"
#ifdef CCLAB_FUZZ_HAVE_VIZ
#include "viz/curves.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cclab;
  if (size == 0) return 0;
  const int which = data[0] % 8;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string ctext(text.c_str());  // what a C string (an environment variable) can hold
  std::string err;
  switch (which) {
    case 0:
    case 1: {
      AlgoProtoEnable e;
      const ncclResult_t r = which == 0 ? parse_algo_env(ctext.c_str(), &e, &err) : parse_proto_env(ctext.c_str(), &e, &err);
      FUZZ_CHECK(r == ncclSuccess || !err.empty(), "NCCL_ALGO/NCCL_PROTO refused without saying why");
      (void)(which == 0 ? describe_algo_enable(e, ctext.c_str()) : describe_proto_enable(e, ctext.c_str()));
      break;
    }
    case 2: {
      std::string preset;
      int machines = 0;
      if (!parse_topo_spec(text, &preset, &machines, &err)) {
        FUZZ_CHECK(!err.empty(), "CCLAB_TOPO refused without saying why");
        break;
      }
      bool known = false;
      for (const std::string& p : preset_names()) known = known || p == preset;
      if (known && machines >= 1 && machines <= 4) {
        Topology t;
        FUZZ_CHECK(make_preset_topology(preset, machines, FabricSpec{}, &t, &err), "an accepted spec does not build: " + err);
      }
      break;
    }
    case 3: {
      int64_t id = 0;
      if (parse_pci_busid(ctext.c_str(), &id)) {
        int64_t back = -1;
        const std::string printed = pci_busid_string(id);
        FUZZ_CHECK(parse_pci_busid(printed.c_str(), &back) && back == id, "bus id " + printed + " does not read back");
      }
      break;
    }
    case 4: {
      int64_t v = 0;
      if (parse_param_int(ctext.c_str(), &v)) {
        int64_t back = 0;
        FUZZ_CHECK(parse_param_int(std::to_string(v).c_str(), &back) && back == v, "integer " + std::to_string(v) + " does not read back");
      }
      break;
    }
    case 5: {
      // A name that is accepted prints as NCCL spells it, and that spelling reads back to the same value.
      AlgoKind a, a2;
      ProtoKind p, p2;
      CollKind c, c2;
      if (algo_from_name(ctext.c_str(), &a))
        FUZZ_CHECK(algo_from_name(algo_name(a), &a2) && a2 == a, std::string("algorithm ") + algo_name(a));
      if (proto_from_name(ctext.c_str(), &p))
        FUZZ_CHECK(proto_from_name(proto_name(p), &p2) && p2 == p, std::string("protocol ") + proto_name(p));
      if (coll_from_name(ctext.c_str(), &c))
        FUZZ_CHECK(coll_from_name(coll_name(c), &c2) && c2 == c, std::string("collective ") + coll_name(c));
      break;
    }
    case 6: {
      std::vector<std::string> args;
      size_t start = 0;
      for (size_t i = 0; i <= text.size(); ++i) {
        if (i == text.size() || text[i] == '\n') {
          args.push_back(text.substr(start, i - start));
          start = i + 1;
        }
      }
      const PerfParse p = parse_perf_options(args);
      if (!p.ok) {
        FUZZ_CHECK(p.help || !p.message.empty(), "cclab perf refused its arguments without saying why");
        break;
      }
      // Sweeps of millions of sizes are legal (nccl-tests' -i 1); only short ones are expanded here.
      const PerfOptions& o = p.options;
      if (o.step_factor <= 1 && o.step_bytes > 0 && (o.max_bytes - o.min_bytes) / o.step_bytes > 100000) break;
      const std::vector<size_t> sizes = size_sweep(o);
      FUZZ_CHECK(!sizes.empty() && sizes.front() == o.min_bytes, "a sweep that does not start at minbytes");
      for (size_t i = 0; i < sizes.size(); ++i) {
        FUZZ_CHECK(sizes[i] <= o.max_bytes, "a size above maxbytes");
        if (i > 0) FUZZ_CHECK(sizes[i] > sizes[i - 1], "a sweep that does not grow");
      }
      break;
    }
    case 7: {
#ifdef CCLAB_FUZZ_HAVE_VIZ
      std::vector<viz::Curve> curves;
      if (!viz::parse_curves(text, "fuzz.csv", &curves, &err)) FUZZ_CHECK(!err.empty(), "curves refused without saying why");
#endif
      break;
    }
  }
  return 0;
}

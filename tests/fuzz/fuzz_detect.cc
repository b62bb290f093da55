// tests/fuzz/fuzz_detect.cc - topology detection (graph/detect.h) on a machine whose sysfs and NVML say
// strange things: what a container, a VM, an old kernel or a half-broken driver may show, and what no
// test machine here can. Four fake machines are laid out once (tests/graph/fake_sysfs.h: NVLink pairs,
// a two-GPU box behind Broadcom switches, an 8-GPU two-socket PCIe server, a DGX H100); the input picks
// one and then changes it for one run:
//   u8 machine, then records:
//     u8 k < 0xF0, u8 n, n bytes   file or symlink k (in path order) gets these bytes as its content, or
//                                  as its target (0 bytes: it is removed; a target may be garbage, dangle
//                                  or loop)
//     u8 0xF0.., u8 gpu, u8 link, u8 what    one NVML answer changes: a link inactive, not P2P, its
//                                  remote bus id failing or pointing at another GPU or at nothing known,
//                                  the GPU's compute capability failing or odd
// Everything is restored after the run.
//
// Properties: detect_topology never crashes, hangs or leaks, and fails only with a reason; what it
// accepts is a model that validates, whose XML (DetectResult::xml) reads back to the same model, with one
// GPU per bus id it lists.
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fake_sysfs.h"
#include "fuzz.h"
#include "graph/detect.h"
#include "graph/topo.h"

namespace {

using cclab_test::FakeNvml;
using cclab_test::FakeSysfs;

struct Entry {
  std::string path;     // absolute
  bool link = false;
  std::string content;  // file bytes or link target
};

struct Machine {
  FakeSysfs fs;
  FakeNvml nvml;
  std::vector<Entry> entries;
  std::vector<int64_t> gpus;  // NVML's GPUs, by bus id
};

std::vector<Entry>* g_collect = nullptr;

int collect(const char* p, const struct stat* st, int type, struct FTW*) {
  Entry e;
  e.path = p;
  if (type == FTW_SL) {
    e.link = true;
    char buf[4096];
    const ssize_t n = readlink(p, buf, sizeof buf);
    e.content.assign(buf, n > 0 ? static_cast<size_t>(n) : 0);
  } else if (type == FTW_F && S_ISREG(st->st_mode)) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    e.content = ss.str();
  } else {
    return 0;
  }
  g_collect->push_back(e);
  return 0;
}

int remove_entry(const char* p, const struct stat*, int, struct FTW*) { return remove(p); }

// The machines live in one directory per process, cclab-fuzz-detect.<pid>, in memory when it can be
// (every run opens hundreds of files, ~0.3 ms each on a disk): removed at exit, and at the next start
// when a process died without exiting (a crash, a timeout, libFuzzer's memory limit).
class WorkDir {
 public:
  WorkDir() {
    const char* tmp = getenv("TMPDIR");
    const std::string base = tmp && *tmp ? tmp : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    const std::string prefix = "cclab-fuzz-detect.";
    if (DIR* d = opendir(base.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        const long pid = strtol(name.c_str() + prefix.size(), nullptr, 10);
        if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
          nftw((base + "/" + name).c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
      }
      closedir(d);
    }
    path_ = base + "/" + prefix + std::to_string(getpid());
    mkdir(path_.c_str(), 0755);
    setenv("TMPDIR", path_.c_str(), 1);  // FakeSysfs makes its directories there
  }
  ~WorkDir() { nftw(path_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

 private:
  std::string path_;
};

std::vector<Machine>& machines() {
  // Built on first use; destroyed at exit (the machines' directories, then the work directory).
  static WorkDir dir;
  static std::vector<Machine> all(4);
  static bool built = [] {
    std::vector<Machine>* v = &all;
    cclab_test::make_nvlink_pairs((*v)[0].fs, (*v)[0].nvml);
    cclab_test::make_two_gpu_box((*v)[1].fs, (*v)[1].nvml, 2, true);
    cclab_test::make_pcie_8gpu_2socket((*v)[2].fs, (*v)[2].nvml);
    cclab_test::make_dgx_h100((*v)[3].fs, (*v)[3].nvml);
    for (Machine& m : *v) {
      g_collect = &m.entries;
      nftw(m.fs.root().c_str(), collect, 16, FTW_PHYS);
      std::sort(m.entries.begin(), m.entries.end(), [](const Entry& a, const Entry& b) { return a.path < b.path; });
      FUZZ_CHECK(!m.entries.empty(), "a fake machine without files under " + m.fs.root());
      for (const auto& g : m.nvml.gpus) m.gpus.push_back(g.first);
    }
    return true;
  }();
  (void)built;
  return all;
}

void put(const Entry& e, const std::string& content, bool remove_it) {
  unlink(e.path.c_str());
  if (remove_it) return;
  if (e.link) {
    if (symlink(content.c_str(), e.path.c_str()) != 0) return;
  } else {
    std::ofstream(e.path, std::ios::binary) << content;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cclab;
  if (size == 0) return 0;
  fuzz::Reader in(data, size);
  Machine& m = machines()[in.u8() % machines().size()];
  FakeNvml nvml = m.nvml;
  std::vector<size_t> touched;
  while (in.left() > 0) {
    const uint8_t k = in.u8();
    if (k < 0xF0) {
      const size_t i = k % m.entries.size();
      const std::string bytes = in.bytes(in.u8());
      std::string content = bytes;
      if (m.entries[i].link && !bytes.empty() && static_cast<uint8_t>(bytes[0]) < 0x20) {
        // A target taken from another link: a real path, only in the wrong place.
        size_t j = static_cast<uint8_t>(bytes[0]) % m.entries.size();
        while (!m.entries[j].link) j = (j + 1) % m.entries.size();
        content = m.entries[j].content;
      }
      put(m.entries[i], content, bytes.empty());
      touched.push_back(i);
    } else if (!m.gpus.empty()) {
      FakeNvml::Gpu& g = nvml.gpus[m.gpus[in.u8() % m.gpus.size()]];
      const uint8_t link = in.u8(), what = in.u8();
      switch (what % 8) {
        case 0: g.cc_fails = true; break;
        case 1: g.major = link % 12; g.minor = what / 8 % 10; break;
        default:
          if (g.links.empty()) break;
          FakeNvml::Link& l = g.links[link % g.links.size()];
          switch (what % 8) {
            case 2: l.active = false; break;
            case 3: l.p2p = false; break;
            case 4: l.remote_fails = true; break;
            case 5: l.remote = FakeNvml::nvml_busid(m.gpus[what / 8 % m.gpus.size()]); break;
            case 6: l.remote = FakeNvml::nvml_busid(int64_t(what) << 12 | 0x7); break;  // nobody sysfs knows
            default: l.remote = "not a bus id"; break;
          }
      }
    }
  }

  DetectOptions o;
  o.sysfs_root = m.fs.root();
  o.nvml = &nvml;
  Topology topo;
  DetectResult r;
  std::string err;
  const bool ok = detect_topology(o, &topo, &r, &err);
  for (size_t i : touched) put(m.entries[i], m.entries[i].content, false);
  if (!ok) {
    FUZZ_CHECK(!err.empty(), "detection failed without saying why");
    return 0;
  }
  std::string why;
  FUZZ_CHECK(topo.validate(&why), "a detected model is invalid: " + why);
  Topology again;
  FUZZ_CHECK(read_topology_xml_string(r.xml, "detected.xml", &again, &why), "the detected XML does not read: " + why);
  FUZZ_CHECK(topology_xml_string(again) == topology_xml_string(topo), "the detected XML is not the model");
  FUZZ_CHECK(static_cast<int>(r.gpu_busids.size()) == topo.gpus_per_machine(),
             std::to_string(r.gpu_busids.size()) + " GPU bus ids for " + std::to_string(topo.gpus_per_machine()) + " GPUs");
  // (The search is not run here: it takes most of a run's time, and fuzz_topo_xml runs it on every model
  // the XML reader accepts, which includes every model detection can write.)
  return 0;
}

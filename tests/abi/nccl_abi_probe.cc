// nccl_abi_probe: prints a canonical, line-per-fact description of whichever <nccl.h> it was compiled
// against. CMake builds it against cclab's header and against NVIDIA's (CUDA toolkit), and
// nccl_abi_test.cc compares the outputs line by line, so any disagreement in names, enum values, macro
// values, struct layouts or function types shows up as a differing line.
//
// The probe calls no NCCL function: functions only appear in unevaluated contexts (decltype, typeid),
// so it links without any library and runs on machines without a GPU or NCCL installed.
//
// Compile-time checks (a failure here breaks the build rather than producing a differing line):
//   - every listed function and its pnccl alias is declared (a missing one is an undeclared name);
//   - each has C language linkage (redeclaring it inside extern "C" is ill-formed otherwise);
//   - each struct has exactly the listed number of members (structured bindings must match it);
//   - the version macros are usable in #if, as user code does to select API generations.

#include <nccl.h>  // first, so that the header is shown to be self-contained

#include <cxxabi.h>

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <typeinfo>

// Which header this build is meant to see. The include path decides, so guard against a build that
// silently picks up the wrong one (the comparison would then pass vacuously). CMake defines one of:
//   CCLAB_ABI_EXPECT_NVIDIA       NVIDIA's header; cclab's include dir must not be on the path
//   CCLAB_ABI_EXPECT_CCLAB        cclab's header on its own: no CUDA header may be pulled in
//   CCLAB_ABI_EXPECT_CCLAB_CUDA   cclab's header with CCLAB_WITH_CUDA_HEADERS (CUDA's include dir after it)
#if defined(CCLAB_ABI_EXPECT_NVIDIA) && __has_include(<cclab/nccl.h>)
#error "expected NVIDIA's nccl.h, but cclab's include directory is on the include path"
#endif
#if (defined(CCLAB_ABI_EXPECT_CCLAB) || defined(CCLAB_ABI_EXPECT_CCLAB_CUDA)) && !__has_include(<cclab/nccl.h>)
#error "expected cclab's nccl.h, but cclab's include directory is not on the include path"
#endif
#if defined(CCLAB_ABI_EXPECT_CCLAB) && defined(__CUDA_RUNTIME_H__)
#error "cclab's nccl.h pulled in cuda_runtime.h without CCLAB_WITH_CUDA_HEADERS"
#endif
// With CUDA headers, NVIDIA's nccl.h makes the CUDA runtime, half, bfloat16 and fp8 types visible, and
// NCCL programs may rely on that; cclab's must do the same.
#if defined(CCLAB_ABI_EXPECT_NVIDIA) || defined(CCLAB_ABI_EXPECT_CCLAB_CUDA)
#if !defined(__CUDA_RUNTIME_H__) || !defined(__CUDA_FP16_H__) || !defined(__CUDA_BF16_H__) || \
    !defined(__CUDA_FP8_H__)
#error "nccl.h with CUDA headers must include cuda_runtime.h, cuda_fp16.h, cuda_bf16.h and cuda_fp8.h"
#endif
[[maybe_unused]] static void ProbeCudaTypes(__half*, __nv_bfloat16*, __nv_fp8_e4m3*, cudaStream_t) {}
#endif

// ---- The API surface, as X-macro lists ------------------------------------------------------------
// Functions in NVIDIA's declaration order, without the "nccl" prefix; X(name) gets both ncclName and
// pncclName.
#define PROBE_FUNCTIONS(X)                                                                              \
  X(MemAlloc) X(MemFree) X(GetVersion) X(GetUniqueId) X(CommInitRankConfig) X(CommInitRank)              \
  X(CommInitAll) X(CommFinalize) X(CommDestroy) X(CommAbort) X(CommRevoke) X(CommSplit) X(CommShrink)    \
  X(CommInitRankScalable) X(GetErrorString) X(GetLastError) X(ResetDebugInit) X(CommGetAsyncError)       \
  X(CommCount) X(CommCuDevice) X(CommUserRank) X(CommRegister) X(CommDeregister) X(CommWindowRegister)   \
  X(CommWindowDeregister) X(RedOpCreatePreMulSum) X(RedOpDestroy) X(Reduce) X(Bcast) X(Broadcast)        \
  X(AllReduce) X(ReduceScatter) X(AllGather) X(AlltoAll) X(Gather) X(Scatter) X(Send) X(Recv)            \
  X(GroupStart) X(GroupEnd) X(GroupSimulateEnd)

#define PROBE_RESULTS(X)                                                                                \
  X(ncclSuccess) X(ncclUnhandledCudaError) X(ncclSystemError) X(ncclInternalError) X(ncclInvalidArgument) \
  X(ncclInvalidUsage) X(ncclRemoteError) X(ncclInProgress) X(ncclNumResults)

#define PROBE_REDOPS(X) X(ncclSum) X(ncclProd) X(ncclMax) X(ncclMin) X(ncclAvg) X(ncclNumOps) X(ncclMaxRedOp)

#define PROBE_DATATYPES(X)                                                                              \
  X(ncclInt8) X(ncclChar) X(ncclUint8) X(ncclInt32) X(ncclInt) X(ncclUint32) X(ncclInt64) X(ncclUint64)  \
  X(ncclFloat16) X(ncclHalf) X(ncclFloat32) X(ncclFloat) X(ncclFloat64) X(ncclDouble) X(ncclBfloat16)    \
  X(ncclFloat8e4m3) X(ncclFloat8e5m2) X(ncclNumTypes)

#define PROBE_RESIDENCES(X) X(ncclScalarDevice) X(ncclScalarHostImmediate)

// Object-like macros whose value (and type) user code can observe.
#define PROBE_MACROS(X)                                                                                 \
  X(NCCL_MAJOR) X(NCCL_MINOR) X(NCCL_PATCH) X(NCCL_SUFFIX) X(NCCL_VERSION_CODE) X(NCCL_COMM_NULL)        \
  X(NCCL_UNIQUE_ID_BYTES) X(NCCL_CONFIG_UNDEF_INT) X(NCCL_CONFIG_UNDEF_PTR) X(NCCL_SPLIT_NOCOLOR)        \
  X(NCCL_UNDEF_FLOAT) X(NCCL_WIN_DEFAULT) X(NCCL_WIN_COLL_SYMMETRIC) X(NCCL_WIN_REQUIRED_ALIGNMENT)      \
  X(NCCL_CTA_POLICY_DEFAULT) X(NCCL_CTA_POLICY_EFFICIENCY) X(NCCL_CTA_POLICY_ZERO) X(NCCL_SHRINK_DEFAULT) \
  X(NCCL_SHRINK_ABORT) X(NCCL_REVOKE_DEFAULT)

// Struct members in declaration order: X(struct, member).
#define PROBE_UNIQUE_ID_FIELDS(X) X(ncclUniqueId, internal)
#define PROBE_CONFIG_FIELDS(X)                                                                          \
  X(ncclConfig_t, size) X(ncclConfig_t, magic) X(ncclConfig_t, version) X(ncclConfig_t, blocking)        \
  X(ncclConfig_t, cgaClusterSize) X(ncclConfig_t, minCTAs) X(ncclConfig_t, maxCTAs)                      \
  X(ncclConfig_t, netName) X(ncclConfig_t, splitShare) X(ncclConfig_t, trafficClass)                     \
  X(ncclConfig_t, commName) X(ncclConfig_t, collnetEnable) X(ncclConfig_t, CTAPolicy)                    \
  X(ncclConfig_t, shrinkShare) X(ncclConfig_t, nvlsCTAs) X(ncclConfig_t, nChannelsPerNetPeer)            \
  X(ncclConfig_t, nvlinkCentricSched)
#define PROBE_SIM_INFO_FIELDS(X)                                                                        \
  X(ncclSimInfo_t, size) X(ncclSimInfo_t, magic) X(ncclSimInfo_t, version) X(ncclSimInfo_t, estimatedTime)

// ---- Compile-time checks ---------------------------------------------------------------------------
// ncclResetDebugInit is deprecated in NCCL; naming it in decltype would warn in every build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// C linkage: a redeclaration with extern "C" of a function first declared with C++ linkage is an error,
// and so is one whose type differs from the header's. decltype keeps the type exactly the header's.
#define PROBE_REDECLARE_C(name)   \
  decltype(nccl##name) nccl##name; \
  decltype(pnccl##name) pnccl##name;
extern "C" {
PROBE_FUNCTIONS(PROBE_REDECLARE_C)
}
#undef PROBE_REDECLARE_C

// Exact member counts: a structured binding needs one name per non-static data member.
[[maybe_unused]] static void ProbeMemberCounts(ncclUniqueId& id, ncclConfig_t& config, ncclSimInfo_t& sim) {
  auto& [internal] = id;
  auto& [c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17] = config;
  auto& [s1, s2, s3, s4] = sim;
  (void)internal, (void)c1, (void)c2, (void)c3, (void)c4, (void)c5, (void)c6, (void)c7, (void)c8, (void)c9;
  (void)c10, (void)c11, (void)c12, (void)c13, (void)c14, (void)c15, (void)c16, (void)c17;
  (void)s1, (void)s2, (void)s3, (void)s4;
}

// The patterns user code uses to pick an API generation must work in the preprocessor.
#if !defined(NCCL_VERSION_CODE) || !defined(NCCL_VERSION) || !defined(NCCL_MAJOR) || !defined(NCCL_MINOR) || \
    !defined(NCCL_PATCH)
#error "nccl.h version macros missing"
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
#define PROBE_PP_AT_LEAST_2_28 1
#else
#define PROBE_PP_AT_LEAST_2_28 0
#endif
#if NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH == NCCL_VERSION_CODE
#define PROBE_PP_CODE_FROM_PARTS 1
#else
#define PROBE_PP_CODE_FROM_PARTS 0
#endif
#if NCCL_CONFIG_UNDEF_INT < 0 && NCCL_SPLIT_NOCOLOR < 0 && NCCL_UNIQUE_ID_BYTES == 128
#define PROBE_PP_SIGNED_SENTINELS 1
#else
#define PROBE_PP_SIGNED_SENTINELS 0
#endif

// ---- Printing --------------------------------------------------------------------------------------
// Wraps a type so typeid keeps its top-level const and references (typeid alone drops them).
template <typename T>
struct ProbeType {};

namespace {

std::string Demangle(const char* mangled) {
  int status = 0;
  char* s = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = (status == 0 && s != nullptr) ? s : mangled;
  std::free(s);
  return out;
}

// The exact type T, spelled by the demangler (stable for a given compiler and platform).
template <typename T>
std::string TypeName() {
  std::string s = Demangle(typeid(ProbeType<T>).name());
  const std::string prefix = "ProbeType<";
  if (s.compare(0, prefix.size(), prefix) == 0 && s.back() == '>') {
    s = s.substr(prefix.size(), s.size() - prefix.size() - 1);
  }
  return s;
}

std::string Quote(const char* s) { return s == nullptr ? std::string("null") : "\"" + std::string(s) + "\""; }

template <typename T>
std::string Format(const T& v) {
  using D = std::decay_t<T>;
  char buf[64];
  if constexpr (std::is_floating_point_v<D>) {
    // %a is exact; %g is for the reader.
    std::snprintf(buf, sizeof buf, "%g (%a)", static_cast<double>(v), static_cast<double>(v));
  } else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>) {
    return Quote(v);
  } else if constexpr (std::is_pointer_v<D> || std::is_null_pointer_v<D>) {
    return v == nullptr ? "null" : "non-null";
  } else if constexpr (std::is_enum_v<D>) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else if constexpr (std::is_signed_v<D>) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%llu (0x%llx)", static_cast<unsigned long long>(v),
                  static_cast<unsigned long long>(v));
  }
  return buf;
}

void Line(const std::string& key, const std::string& value) { std::printf("%s = %s\n", key.c_str(), value.c_str()); }

template <typename E>
void PrintEnumType(const char* name) {
  using U = std::underlying_type_t<E>;
  Line(std::string("enum ") + name,
       "type " + TypeName<E>() + ", sizeof " + std::to_string(sizeof(E)) + ", alignof " +
           std::to_string(alignof(E)) + ", underlying " + TypeName<U>());
}

template <typename S>
void PrintStruct(const char* name) {
  Line(std::string("struct ") + name, "type " + TypeName<S>() + ", sizeof " + std::to_string(sizeof(S)) +
                                          ", alignof " + std::to_string(alignof(S)) + ", standard_layout " +
                                          std::to_string(std::is_standard_layout_v<S>) + ", trivial " +
                                          std::to_string(std::is_trivial_v<S>));
}

}  // namespace

int main() {
  // Macros: value and type, since both can change the meaning of user code (e.g. overloads, printf).
#define PROBE_MACRO(m) Line("macro " #m, Format(m) + " : " + TypeName<decltype(m)>());
  PROBE_MACROS(PROBE_MACRO)
#undef PROBE_MACRO
  Line("macro NCCL_VERSION(2,28,9)",
       Format(NCCL_VERSION(2, 28, 9)) + " : " + TypeName<decltype(NCCL_VERSION(2, 28, 9))>());
  Line("macro NCCL_VERSION(2,8,0)", Format(NCCL_VERSION(2, 8, 0)));
  Line("macro NCCL_VERSION(2,7,8)", Format(NCCL_VERSION(2, 7, 8)));
  Line("macro NCCL_VERSION(2,9,0)", Format(NCCL_VERSION(2, 9, 0)));
  Line("macro NCCL_VERSION(3,0,1)", Format(NCCL_VERSION(3, 0, 1)));
  Line("preprocessor NCCL_VERSION_CODE >= NCCL_VERSION(2,28,0)", Format(PROBE_PP_AT_LEAST_2_28));
  Line("preprocessor NCCL_MAJOR*10000+NCCL_MINOR*100+NCCL_PATCH == NCCL_VERSION_CODE",
       Format(PROBE_PP_CODE_FROM_PARTS));
  Line("preprocessor NCCL_CONFIG_UNDEF_INT < 0 && NCCL_SPLIT_NOCOLOR < 0", Format(PROBE_PP_SIGNED_SENTINELS));

  // Enums: the type, then each constant's value and type.
#define PROBE_ENUMERATOR(e) Line("enumerator " #e, Format(e) + " : " + TypeName<decltype(e)>());
  PrintEnumType<ncclResult_t>("ncclResult_t");
  PROBE_RESULTS(PROBE_ENUMERATOR)
  PrintEnumType<ncclRedOp_dummy_t>("ncclRedOp_dummy_t");
  PROBE_ENUMERATOR(ncclNumOps_dummy)
  PrintEnumType<ncclRedOp_t>("ncclRedOp_t");
  PROBE_REDOPS(PROBE_ENUMERATOR)
  PrintEnumType<ncclDataType_t>("ncclDataType_t");
  PROBE_DATATYPES(PROBE_ENUMERATOR)
  PrintEnumType<ncclScalarResidence_t>("ncclScalarResidence_t");
  PROBE_RESIDENCES(PROBE_ENUMERATOR)
#undef PROBE_ENUMERATOR

  // Handle and stream typedefs: the pointee's tag name is part of the ABI (it appears in mangled names
  // of C++ functions taking these types).
  Line("typedef ncclComm_t", TypeName<ncclComm_t>());
  Line("typedef ncclWindow_t", TypeName<ncclWindow_t>());
  Line("typedef cudaStream_t", TypeName<cudaStream_t>());

  // Struct layouts.
#define PROBE_FIELD(S, f)                                                                                  \
  Line("field " #S "." #f, "offset " + std::to_string(offsetof(S, f)) + ", sizeof " +                      \
                               std::to_string(sizeof(S::f)) + ", type " + TypeName<decltype(S::f)>());
  PrintStruct<ncclUniqueId>("ncclUniqueId");
  PROBE_UNIQUE_ID_FIELDS(PROBE_FIELD)
  PrintStruct<ncclConfig_t>("ncclConfig_t");
  PROBE_CONFIG_FIELDS(PROBE_FIELD)
  PrintStruct<ncclSimInfo_t>("ncclSimInfo_t");
  PROBE_SIM_INFO_FIELDS(PROBE_FIELD)
#undef PROBE_FIELD

  // Initializer values, field by field (the initializers are brace lists, so their values are only
  // observable through an initialised object).
  const ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  const ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
#define PROBE_INIT_CONFIG(S, f) Line("NCCL_CONFIG_INITIALIZER." #f, Format(config.f));
#define PROBE_INIT_SIM(S, f) Line("NCCL_SIM_INFO_INITIALIZER." #f, Format(sim.f));
  PROBE_CONFIG_FIELDS(PROBE_INIT_CONFIG)
  PROBE_SIM_INFO_FIELDS(PROBE_INIT_SIM)
#undef PROBE_INIT_CONFIG
#undef PROBE_INIT_SIM

  // Function types (parameter and return types; noexcept would show too). Language linkage is checked
  // at compile time above, since typeid does not encode it.
  int functions = 0;
#define PROBE_FUNCTION(name)                                                      \
  Line("function nccl" #name, TypeName<decltype(nccl##name)>());                  \
  Line("function pnccl" #name, TypeName<decltype(pnccl##name)>());                \
  functions += 2;
  PROBE_FUNCTIONS(PROBE_FUNCTION)
#undef PROBE_FUNCTION
  Line("functions", std::to_string(functions));
  return 0;
}

#pragma GCC diagnostic pop

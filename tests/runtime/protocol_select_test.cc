// NCCL_PROTO reaches the runtime: the protocol it names is the one collectives run with (read back
// from the COLL log line), and a string NCCL would reject fails communicator init with a message
// naming the variable and the bad token. Parameters are read once per process, so ctest runs this
// binary twice with different environments and a filter each.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "comm_fixture.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ProtocolSelect, ForcedLLIsUsed) {
  const char* log = getenv("NCCL_DEBUG_FILE");
  ASSERT_NE(log, nullptr) << "run through ctest (NCCL_DEBUG_FILE is set there)";
  std::vector<ncclComm_t> comms(3);
  ASSERT_EQ(ncclCommInitAll(comms.data(), 3, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<std::vector<float>> in(3, std::vector<float>(1000)), out(3, std::vector<float>(1000));
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 1000; ++i) in[r][i] = static_cast<float>(r + i % 5);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r)
    ASSERT_EQ(ncclAllReduce(in[r].data(), out[r].data(), 1000, ncclFloat, ncclSum, comms[r], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(out[r][i], static_cast<float>(3 + 3 * (i % 5))) << r << " " << i;
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  std::string path = log;  // %p is this process's id
  const size_t at = path.find("%p");
  if (at != std::string::npos) path.replace(at, 2, std::to_string(getpid()));
  const std::string text = slurp(path);
  EXPECT_NE(text.find("protocol LL"), std::string::npos) << text;
  EXPECT_EQ(text.find("protocol Simple"), std::string::npos) << text;
  std::remove(path.c_str());
}

TEST(ProtocolSelect, InvalidStringRejected) {
  std::vector<ncclComm_t> comms(2, nullptr);
  EXPECT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclInvalidArgument);
  const std::string err = ncclGetLastError(nullptr);
  EXPECT_NE(err.find("NCCL_PROTO"), std::string::npos) << err;
  EXPECT_NE(err.find("Fast"), std::string::npos) << err;
}

}  // namespace

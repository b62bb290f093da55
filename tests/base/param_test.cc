// tests/base/param_test.cc - integer and string parameters, the configuration file, precedence of
// the environment, and the ENV echo.
#include "base/param.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "base/log.h"
#include "test_env.h"

namespace cclab {
namespace {

using testing_env::read_file;
using testing_env::ScopedEnv;
using testing_env::TempDir;
using testing_env::write_file;

// Isolates a test from the user's ~/.nccl.conf (HOME points at an empty directory) and from any
// NCCL_CONF_FILE of the caller.
class ParamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.set("HOME", home_.path());
    env_.unset("NCCL_CONF_FILE");
    env_.unset("NCCL_DEBUG");
    env_.unset("CCLAB_TEST_INT");
    env_.unset("CCLAB_TEST_STR");
  }
  TempDir home_;
  ScopedEnv env_;
};

TEST(ParseParamInt, DecimalHexAndRejects) {
  int64_t v = 0;
  EXPECT_TRUE(parse_param_int("42", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(parse_param_int("-7", &v));
  EXPECT_EQ(v, -7);
  EXPECT_TRUE(parse_param_int(" 0x1F ", &v));
  EXPECT_EQ(v, 31);
  EXPECT_TRUE(parse_param_int("0XfF", &v));
  EXPECT_EQ(v, 255);
  EXPECT_TRUE(parse_param_int("010", &v));  // decimal, not octal
  EXPECT_EQ(v, 10);
  EXPECT_TRUE(parse_param_int("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_TRUE(parse_param_int("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  v = 123;
  for (const char* bad : {"", " ", "abc", "12abc", "0x", "0xg", "1 2", "--1", "9223372036854775808", "4M", "1.5"}) {
    EXPECT_FALSE(parse_param_int(bad, &v)) << "'" << bad << "'";
  }
  EXPECT_EQ(v, 123);
}

TEST_F(ParamTest, IntFromEnvironmentDecimalAndHex) {
  env_.set("CCLAB_TEST_INT", "1048576");
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 5), 1048576);
  env_.set("CCLAB_TEST_INT", "0x100");
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 5), 256);
}

TEST_F(ParamTest, UnsetOrEmptyGivesDefault) {
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 17), 17);
  EXPECT_FALSE(param_is_set("CCLAB_TEST_INT"));
  EXPECT_EQ(param_str("CCLAB_TEST_STR", "dflt"), "dflt");
  EXPECT_EQ(param_str("CCLAB_TEST_STR", nullptr), "");
  env_.set("CCLAB_TEST_INT", "");
  EXPECT_FALSE(param_is_set("CCLAB_TEST_INT"));
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 17), 17);
}

TEST_F(ParamTest, InvalidIntWarnsNamingTheVariableAndUsesDefault) {
  env_.set("CCLAB_TEST_INT", "lots");
  set_last_error("");
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 99), 99);
  std::string err = last_error();
  EXPECT_NE(err.find("CCLAB_TEST_INT=lots"), std::string::npos) << err;
  EXPECT_NE(err.find("default 99"), std::string::npos) << err;
  // Warned once: the second read is cached and silent.
  set_last_error("");
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 99), 99);
  EXPECT_STREQ(last_error(), "");
}

TEST_F(ParamTest, ValuesAreCachedUntilReset) {
  env_.set("CCLAB_TEST_STR", "first");
  EXPECT_EQ(param_str("CCLAB_TEST_STR", nullptr), "first");
  setenv("CCLAB_TEST_STR", "second", 1);  // no reset: still the cached value
  EXPECT_EQ(param_str("CCLAB_TEST_STR", nullptr), "first");
  reset_params_for_testing();
  EXPECT_EQ(param_str("CCLAB_TEST_STR", nullptr), "second");
}

TEST_F(ParamTest, ConfigFileFromNcclConfFile) {
  TempDir dir;
  std::string conf = dir.path() + "/my.conf";
  write_file(conf,
             "# a comment\n"
             "CCLAB_TEST_INT = 0x20\n"
             "CCLAB_TEST_STR=from file\n"
             "not a setting\n"
             "CCLAB_TEST_STR=second definition loses\n");
  env_.set("NCCL_CONF_FILE", conf);
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 0), 32);
  EXPECT_EQ(param_str("CCLAB_TEST_STR", nullptr), "from file");
  EXPECT_TRUE(param_is_set("CCLAB_TEST_STR"));
  std::string value, path;
  EXPECT_EQ(param_lookup_quiet("CCLAB_TEST_INT", &value, &path), ParamSource::kConfigFile);
  EXPECT_EQ(value, "0x20");
  EXPECT_EQ(path, conf);
}

TEST_F(ParamTest, ConfigFileFromHome) {
  write_file(home_.path() + "/.nccl.conf", "CCLAB_TEST_INT=7\n");
  reset_params_for_testing();
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 0), 7);
}

TEST_F(ParamTest, NcclConfFileReplacesHomeFile) {
  TempDir dir;
  write_file(home_.path() + "/.nccl.conf", "CCLAB_TEST_INT=7\nCCLAB_TEST_STR=home\n");
  write_file(dir.path() + "/c.conf", "CCLAB_TEST_INT=8\n");
  env_.set("NCCL_CONF_FILE", dir.path() + "/c.conf");
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 0), 8);
  EXPECT_FALSE(param_is_set("CCLAB_TEST_STR"));  // ~/.nccl.conf is not read when NCCL_CONF_FILE is set
}

TEST_F(ParamTest, EnvironmentWinsOverConfigFile) {
  TempDir dir;
  write_file(dir.path() + "/c.conf", "CCLAB_TEST_INT=8\n");
  env_.set("NCCL_CONF_FILE", dir.path() + "/c.conf");
  env_.set("CCLAB_TEST_INT", "9");
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 0), 9);
}

TEST_F(ParamTest, MissingConfigFileIsFine) {
  env_.set("NCCL_CONF_FILE", home_.path() + "/does-not-exist.conf");
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 3), 3);
}

TEST_F(ParamTest, EchoesUnderInfoEnvOnce) {
  TempDir dir;
  std::string conf = dir.path() + "/c.conf";
  write_file(conf, "CCLAB_TEST_STR=abc\n");
  env_.set("NCCL_CONF_FILE", conf);
  env_.set("CCLAB_TEST_INT", "1048576");
  env_.set("NCCL_DEBUG", "INFO");
  env_.set("NCCL_DEBUG_SUBSYS", "ENV");
  env_.set("NCCL_DEBUG_FILE", dir.path() + "/env.log");
  set_log_rank(-1);
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 0), 1048576);
  EXPECT_EQ(param_int("CCLAB_TEST_INT", 0), 1048576);
  EXPECT_EQ(param_str("CCLAB_TEST_STR", nullptr), "abc");
  EXPECT_EQ(param_int("CCLAB_TEST_UNSET_PARAM", 0), 0);  // unset: no echo
  reset_log_for_testing();
  std::string log = read_file(dir.path() + "/env.log");
  std::string expected_env = "NCCL INFO CCLAB_TEST_INT set by environment to 1048576.\n";
  std::string expected_file = "NCCL INFO CCLAB_TEST_STR set by configuration file " + conf + " to abc.\n";
  size_t first = log.find(expected_env);
  EXPECT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(expected_env, first + 1), std::string::npos) << "echoed twice:\n" << log;
  EXPECT_NE(log.find(expected_file), std::string::npos) << log;
  EXPECT_EQ(log.find("CCLAB_TEST_UNSET_PARAM"), std::string::npos) << log;
}

TEST_F(ParamTest, DebugLevelMayComeFromConfigFile) {
  TempDir dir;
  write_file(dir.path() + "/c.conf", "NCCL_DEBUG=TRACE\n");
  env_.set("NCCL_CONF_FILE", dir.path() + "/c.conf");
  EXPECT_EQ(log_level(), LogLevel::kTrace);
}

}  // namespace
}  // namespace cclab

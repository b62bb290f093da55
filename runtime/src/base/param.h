// runtime/src/base/param.h - parameters from the environment (NCCL_* and CCLAB_* variables).
//
// As in NCCL, a variable may also come from a configuration file: NCCL_CONF_FILE, else
// ~/.nccl.conf, else /etc/nccl.conf (lines NAME=VALUE, # comments); the environment wins.
// Each parameter is read once and cached; the first read of a parameter that is set echoes it under
// INFO ENV, e.g. "NCCL_BUFFSIZE set by environment to 1048576.".
#pragma once

#include <cstdint>
#include <string>

namespace cclab {

// Integer parameter `name` (the full variable name, e.g. "NCCL_BUFFSIZE"). Accepts decimal and
// 0x-hex. A value that is not a number gives a WARN naming the variable and the default is used.
int64_t param_int(const char* name, int64_t default_value);

// String parameter; `default_value` may be nullptr (then "" when unset).
std::string param_str(const char* name, const char* default_value);

// Whether the variable is set (environment or configuration file).
bool param_is_set(const char* name);

// Forgets cached values (for tests that change the environment).
void reset_params_for_testing();

}  // namespace cclab

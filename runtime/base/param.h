// runtime/base/param.h - parameters from the environment (NCCL_* and CCLAB_* variables).
//
// As in NCCL, a variable may also come from a configuration file: NCCL_CONF_FILE, else
// ~/.nccl.conf, else /etc/nccl.conf (lines NAME=VALUE, # comments); the environment wins. Like NCCL
// (which loads the files with setenv(..., overwrite=0)), /etc/nccl.conf is read too, below the user's
// file, and within a file the first definition of a name wins.
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

// Forgets cached values and the parsed configuration file (for tests that change the environment
// or NCCL_CONF_FILE).
void reset_params_for_testing();

// Where a value came from.
enum class ParamSource { kUnset, kEnvironment, kConfigFile };

// Looks `name` up (environment, then configuration file) without caching it and without the ENV
// echo. The logger reads NCCL_DEBUG* through this, since echoing would log from inside the logger.
// Empty values count as unset, as in NCCL. `config_path` (optional) gets the file a value came from.
ParamSource param_lookup_quiet(const char* name, std::string* value, std::string* config_path = nullptr);

// Parses an integer the way param_int does: optional sign, then decimal digits or 0x/0X and hex
// digits, surrounding blanks allowed, nothing else. Returns false (and leaves *out alone) otherwise,
// including on overflow.
bool parse_param_int(const char* text, int64_t* out);

}  // namespace cclab

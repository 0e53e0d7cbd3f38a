// A stand-in for the process environment: settings resolved from a fixed map (unit tests only).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/config.hpp"

namespace cgdr_test {

inline cgdr::base::EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace cgdr_test

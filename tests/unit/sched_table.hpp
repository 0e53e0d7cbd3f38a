// The scheduler's unit tests share these: a rule table built from given settings, and a fixture
// that puts the settings back to their defaults after each test.
#pragma once

#include <map>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "fake_env.hpp"
#include "sched/select.hpp"

namespace cgdr_test {

// The names the scheduler's tests speak in (`using namespace cgdr_test;` brings them in).
using cgdr::sched::Caps;
using cgdr::sched::Channel;
using cgdr::sched::Dst;
using cgdr::sched::Pattern;
using cgdr::sched::PeerClass;
using cgdr::sched::Query;

inline cgdr::sched::Table tableWith(std::map<std::string, std::string> vars) {
  cgdr::base::Registry::instance().resolveAll(fakeEnv(std::move(vars)));
  return cgdr::sched::Table::fromSettings();
}

class Sched : public ::testing::Test {
 protected:
  void TearDown() override { cgdr::base::Registry::instance().resolveAll(fakeEnv({})); }
};

}  // namespace cgdr_test

// The workload tracer: the rule that calls a peer's traffic latency- or bandwidth-bound, its counts
// per peer, the window of recent calls it judges over, and its settings.
#include <gtest/gtest.h>

#include <string>

#include "fake_env.hpp"
#include "sched/tracer.hpp"

using namespace cgdr;
using cgdr_test::fakeEnv;
using sched::Pattern;

namespace {

TEST(Tracer, ClassifyRule) {
  EXPECT_EQ(sched::classify(0, 0, 64, 0.5), Pattern::kLatency);
  EXPECT_EQ(sched::classify(63, 63, 64, 0.5), Pattern::kLatency);  // too few calls yet
  EXPECT_EQ(sched::classify(64, 32, 64, 0.5), Pattern::kBandwidth);
  EXPECT_EQ(sched::classify(64, 31, 64, 0.5), Pattern::kLatency);
  EXPECT_EQ(sched::classify(1000, 1000, 64, 1.0), Pattern::kBandwidth);
  EXPECT_EQ(sched::classify(1000, 0, 0, 0.0), Pattern::kBandwidth);
}

TEST(Tracer, CountsPerPeer) {
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE_MIN", "10"}, {"CGDR_TRACE_THRESHOLD", "0.75"}}));
  sched::Tracer tr;
  tr.resize(3);
  for (int i = 0; i < 8; ++i) tr.count(1, true);
  for (int i = 0; i < 2; ++i) tr.count(1, false);
  for (int i = 0; i < 20; ++i) tr.count(2, i % 2 == 0);
  tr.count(7, true);  // out of range: ignored
  EXPECT_EQ(tr.pattern(0), Pattern::kLatency);
  EXPECT_EQ(tr.pattern(1), Pattern::kBandwidth);  // 8 of 10
  EXPECT_EQ(tr.pattern(2), Pattern::kLatency);    // 10 of 20
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE", "0"}}));
  EXPECT_EQ(tr.pattern(1), Pattern::kLatency);  // tracing off: latency switch points
  base::Registry::instance().resolveAll(fakeEnv({}));
}

// The counts are judged over a window of recent calls: a program that moves from non-blocking to
// blocking calls (and back) gets the other pattern within a window, where counts since the start
// would keep the old one for as many calls as it made before.
TEST(Tracer, WindowFollowsAPhaseChange) {
  base::Registry::instance().resolveAll(fakeEnv({}));  // CGDR_TRACE_MIN 64, CGDR_TRACE_THRESHOLD 0.5
  for (std::uint64_t window : {std::uint64_t{256}, std::uint64_t{0}}) {
    sched::Tracer tr;
    tr.resize(2, window);
    for (int i = 0; i < 2000; ++i) tr.count(1, true);
    EXPECT_EQ(tr.pattern(1), Pattern::kBandwidth) << "window " << window;
    int flipped = -1;  // the blocking call after which the pattern was latency-bound again
    for (int i = 1; i <= 600 && flipped < 0; ++i) {
      tr.count(1, false);
      if (tr.pattern(1) == Pattern::kLatency) flipped = i;
    }
    if (window) {
      EXPECT_GT(flipped, 0) << "not latency-bound after 600 blocking calls, window " << window;
      EXPECT_LE(flipped, 256);
      EXPECT_GE(flipped, 64);  // not at once either: half the window's calls were non-blocking
      int back = -1;
      for (int i = 1; i <= 600 && back < 0; ++i) {
        tr.count(1, true);
        if (tr.pattern(1) == Pattern::kBandwidth) back = i;
      }
      EXPECT_GT(back, 0) << "not bandwidth-bound again after 600 non-blocking calls";
      EXPECT_LE(back, 256);
    } else {
      EXPECT_EQ(flipped, -1) << "every call since the start: 2000 of 2600 non-blocking stays bandwidth-bound";
    }
    EXPECT_EQ(tr.pattern(0), Pattern::kLatency);  // the other peer untouched
  }
}

// Halving keeps the share: a steady mix stays on its side of the threshold at every call.
TEST(Tracer, WindowKeepsASteadyShare) {
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE_MIN", "16"}, {"CGDR_TRACE_THRESHOLD", "0.6"}}));
  sched::Tracer tr;
  tr.resize(3, 64);
  int wrong1 = 0, wrong2 = 0;
  for (int i = 0; i < 10000; ++i) {
    tr.count(1, i % 4 != 3);  // three of four non-blocking
    tr.count(2, i % 4 == 3);  // one of four
    if (i >= 16) {
      wrong1 += tr.pattern(1) != Pattern::kBandwidth;
      wrong2 += tr.pattern(2) != Pattern::kLatency;
    }
  }
  EXPECT_EQ(wrong1, 0);
  EXPECT_EQ(wrong2, 0);
  base::Registry::instance().resolveAll(fakeEnv({}));
}

// CGDR_SCHED_INFO's line on the tracer: which peers' traffic takes the bandwidth-bound rows.
TEST(Tracer, DescribesTheRuleInForce) {
  base::Registry::instance().resolveAll(fakeEnv({}));
  std::string d = sched::describeTracer();
  EXPECT_NE(d.find("once this rank made 64 calls with it and at least 0.50 of them (the recent ones: counts "
                   "halved at 1024) were non-blocking"),
            std::string::npos)
      << d;
  base::Registry::instance().resolveAll(
      fakeEnv({{"CGDR_TRACE_MIN", "100"}, {"CGDR_TRACE_THRESHOLD", "0.8"}, {"CGDR_TRACE_WINDOW", "0"}}));
  d = sched::describeTracer();
  EXPECT_NE(d.find("made 100 calls with it and at least 0.80 of them (all since the start)"), std::string::npos) << d;
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE_MIN", "300"}, {"CGDR_TRACE_WINDOW", "256"}}));
  d = sched::describeTracer();
  EXPECT_NE(d.find("counts halved at 600)"), std::string::npos) << d;  // twice CGDR_TRACE_MIN
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE", "0"}}));
  d = sched::describeTracer();
  EXPECT_NE(d.find("workload tracer off (CGDR_TRACE=0)"), std::string::npos) << d;
  base::Registry::instance().resolveAll(fakeEnv({}));
}

TEST(Tracer, WindowSetting) {
  EXPECT_EQ(sched::traceWindow(0, 64), UINT64_MAX);  // 0: every call since the start
  EXPECT_EQ(sched::traceWindow(1024, 64), 1024u);
  EXPECT_EQ(sched::traceWindow(100, 64), 128u);  // halved counts must still reach CGDR_TRACE_MIN
  EXPECT_EQ(sched::traceWindow(1, 0), 2u);
  EXPECT_EQ(sched::traceWindow(5, UINT64_MAX / 2 + 1), UINT64_MAX);
  sched::Tracer tr;
  tr.resize(2, 1);  // a window of its own: at least 2 too (1 would halve every count to 0)
  EXPECT_EQ(tr.window(), 2u);
  tr.resize(2, 0);
  EXPECT_EQ(tr.window(), UINT64_MAX);
  base::Registry::instance().resolveAll(fakeEnv({}));
  tr.resize(2);
  EXPECT_EQ(tr.window(), 1024u);
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE_WINDOW", "300"}}));
  tr.resize(2);
  EXPECT_EQ(tr.window(), 300u);
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE_WINDOW", "0"}}));
  tr.resize(2);
  EXPECT_EQ(tr.window(), UINT64_MAX);
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE_MIN", "1000"}}));
  tr.resize(2);
  EXPECT_EQ(tr.window(), 2000u);
  base::Registry::instance().resolveAll(fakeEnv({}));
}

// A negative count is invalid: the default, as for any bad value (before, a negative CGDR_TRACE_MIN
// meant that no pattern was ever decided).
TEST(Tracer, NegativeSettingsAreInvalid) {
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE_MIN", "-1"}, {"CGDR_TRACE_WINDOW", "-5"}}));
  std::string d = sched::describeTracer();
  EXPECT_NE(d.find("made 64 calls with it"), std::string::npos) << d;
  EXPECT_NE(d.find("counts halved at 1024)"), std::string::npos) << d;
  sched::Tracer tr;
  tr.resize(2);
  EXPECT_EQ(tr.window(), 1024u);
  for (int i = 0; i < 64; ++i) tr.count(1, true);
  EXPECT_EQ(tr.pattern(1), sched::Pattern::kBandwidth);
  base::Registry::instance().resolveAll(fakeEnv({{"CGDR_TRACE_MIN", "0"}}));  // 0 is a value: decided at once
  tr.resize(2);
  tr.count(1, true);
  EXPECT_EQ(tr.pattern(1), sched::Pattern::kBandwidth);
  base::Registry::instance().resolveAll(fakeEnv({}));
}

}  // namespace

// The host rail beside a single copy between two GPUs: its tail by size, pattern and settings, the
// question about the other way, and the governor that follows where tails landed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "sched/select.hpp"
#include "sched_table.hpp"

using namespace cgdr;
using namespace cgdr_test;

namespace {

// The host rail beside a single copy between two GPUs: its tail by size and settings.
TEST_F(Sched, HostRailTailBySizeAndSettings) {
  sched::Table t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0.25"},
                              {"CGDR_CUDA_HOST_RAIL_OFFSET", "1M"},
                              {"CGDR_CUDA_HOST_RAIL_OFFSET_BW", "1M"},
                              {"CGDR_CUDA_HOST_RAIL_MIN_BW", "0"}});
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kGpu, 1 << 20, Pattern::kLatency, Caps{}};
  q.caps.otherGpu = true;
  q.caps.vmmZc = true;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "up to the offset NVLink alone";
  q.bytes = (1 << 20) + 4 * 65536 - 1;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "a quarter of 256 KiB - 1: less than one 64 KiB block";
  q.bytes = (1 << 20) + 4 * 65536;
  EXPECT_EQ(sched::hostRail(t, q), 65536u);
  q.bytes = (33u << 20) + 12345;
  EXPECT_EQ(sched::hostRail(t, q), 8u << 20) << "a quarter of 32 MiB + 12345, rounded down to 64 KiB";
  q.pattern = Pattern::kBandwidth;
  EXPECT_EQ(sched::hostRail(t, q), 8u << 20) << "the same for bandwidth-bound traffic at the same offset";
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0.25"},
                 {"CGDR_CUDA_HOST_RAIL_OFFSET", "1M"},
                 {"CGDR_CUDA_HOST_RAIL_OFFSET_BW", "5M"},
                 {"CGDR_CUDA_HOST_RAIL_MIN_BW", "0"}});
  EXPECT_EQ(sched::hostRail(t, q), 7u << 20) << "bandwidth-bound: a quarter of what exceeds its own offset";
  q.pattern = Pattern::kLatency;
  EXPECT_EQ(sched::hostRail(t, q), 8u << 20) << "latency-bound: its offset unchanged";
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0.25"},
                 {"CGDR_CUDA_HOST_RAIL_OFFSET", "40M"},
                 {"CGDR_CUDA_HOST_RAIL_OFFSET_BW", "1M"},
                 {"CGDR_CUDA_HOST_RAIL_MIN_BW", "0"}});
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "latency-bound up to its offset: NVLink alone";
  q.pattern = Pattern::kBandwidth;
  EXPECT_EQ(sched::hostRail(t, q), 8u << 20) << "bandwidth-bound beyond its offset";
  q.peer = PeerClass::kSameNamespace;
  EXPECT_EQ(sched::hostRail(t, q), 8u << 20) << "the same between ranks of one namespace";
  q.peer = PeerClass::kSelf;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "one process copies once";
  q.peer = PeerClass::kContainer;
  q.caps.otherGpu = false;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "source and destination on one GPU";
  q.caps.otherGpu = true;
  q.sameGpu = true;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "one GPU used in turns";
  q.sameGpu = false;
  q.src = mem::MemKind::kManaged;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "managed memory is not pushed";
  q.src = mem::MemKind::kDevice;
  for (Dst d : {Dst::kHost, Dst::kUnknown, Dst::kPosted}) {
    q.dst = d;
    EXPECT_EQ(sched::hostRail(t, q), 0u) << "destination " << int(d);
  }
  q.dst = Dst::kGpu;
  q.bothWays = true;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "traffic both ways: off by default";
  EXPECT_EQ(sched::hostRail(tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0.25"},
                                       {"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", "0.25"},
                                       {"CGDR_CUDA_HOST_RAIL_OFFSET_BW", "1M"},
                                       {"CGDR_CUDA_HOST_RAIL_MIN_BW", "0"}}),
                            q),
            0u)
      << "traffic both ways under CGDR_CUDA_HOST_RAIL_MIN_BOTH_WAYS";
  q.bothWays = false;
  q.caps.contiguous = false;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "non-contiguous data is not pushed";
  q.caps.contiguous = true;
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0"}});
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "share 0: off";
  // A share outside 0-0.9 is refused (with a warning): the default's 0.07.
  q.bytes = 10u << 20;
  for (const char* bad : {"-1", "5", "0.91"}) {
    t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", bad},
                   {"CGDR_CUDA_HOST_RAIL_OFFSET", "0"},
                   {"CGDR_CUDA_HOST_RAIL_OFFSET_BW", "0"}});
    EXPECT_EQ(sched::hostRail(t, q), (10u << 20) * 7 / 100 / 65536 * 65536) << bad;
  }
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0.9"},
                 {"CGDR_CUDA_HOST_RAIL_OFFSET", "0"},
                 {"CGDR_CUDA_HOST_RAIL_OFFSET_BW", "0"}});
  EXPECT_EQ(sched::hostRail(t, q), 9u * (1u << 20) / 65536 * 65536) << "at most 0.9: NVLink keeps a part";
  t = tableWith({{"CGDR_FORCE_CHANNEL", "cuda-vmm-zc"}});
  q.bytes = 256u << 20;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "a forced channel carries the whole message";
  t = tableWith({});
  EXPECT_EQ(sched::hostRail(t, q), (254u << 20) * 7 / 100 / 65536 * 65536)
      << "defaults, bandwidth-bound: 0.07 beyond 2 MiB";
  q.pattern = Pattern::kLatency;
  EXPECT_EQ(sched::hostRail(t, q), (240u << 20) * 7 / 100 / 65536 * 65536)
      << "defaults, latency-bound: 0.07 beyond 16 MiB";
  q.bytes = 16u << 20;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "defaults, latency-bound: 16 MiB crosses NVLink alone";
  q.pattern = Pattern::kBandwidth;
  EXPECT_EQ(sched::hostRail(t, q), (14u << 20) * 7 / 100 / 65536 * 65536) << "bandwidth-bound 16 MiB: a tail";
  q.bytes = 8u << 20;
  EXPECT_EQ(sched::hostRail(t, q), (6u << 20) * 7 / 100 / 65536 * 65536) << "bandwidth-bound from 8 MiB on";
  q.bytes = (8u << 20) - 1;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "bandwidth-bound under 8 MiB: NVLink alone";
  q.bytes = 256u << 20;
  q.caps.otherGpuInvisible = true;
  EXPECT_EQ(sched::hostRail(t, q), (254u << 20) / 10 / 65536 * 65536) << "the other GPU not visible: 0.1";
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE", "0"}});
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "off where the other GPU is not visible";
  q.caps.otherGpuInvisible = false;
  EXPECT_EQ(sched::hostRail(t, q), (254u << 20) * 7 / 100 / 65536 * 65536) << "and on where it is";
  t = tableWith({});
  q.bothWays = true;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "traffic both ways: off by default";
  q.caps.otherGpuInvisible = true;
  EXPECT_EQ(sched::hostRail(t, q), static_cast<std::size_t>(0.05 * static_cast<double>(254u << 20)) / 65536 * 65536)
      << "both ways, GPU not visible: 0.05 by default";
  EXPECT_EQ(sched::hostRail(tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS_INVISIBLE", "0"}}), q), 0u)
      << "both ways, GPU not visible: off where set so";
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS_INVISIBLE", "0.09"}});
  EXPECT_EQ(sched::hostRail(t, q), (254u << 20) * 9 / 100 / 65536 * 65536) << "both ways, GPU not visible: 0.09";
  q.caps.otherGpuInvisible = false;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "that share only where the GPU is not visible";
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", "0.09"},
                 {"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS_INVISIBLE", "0.09"}});
  EXPECT_EQ(sched::hostRail(t, q), (254u << 20) * 9 / 100 / 65536 * 65536) << "traffic both ways: 0.09";
  q.caps.otherGpuInvisible = true;
  q.bytes = (64u << 20) - 1;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "both ways under 64 MiB: NVLink alone";
  q.bytes = 64u << 20;
  EXPECT_EQ(sched::hostRail(t, q), (62u << 20) * 9 / 100 / 65536 * 65536) << "both ways from 64 MiB on";
  q.bothWays = false;
  EXPECT_EQ(sched::hostRail(t, q), (62u << 20) / 10 / 65536 * 65536) << "the same one way: 0.1";
  q.bytes = 256u << 20;
  q.caps.otherGpuInvisible = false;
  q.bothWays = true;
  EXPECT_EQ(sched::hostRail(tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", "0"}}), q), 0u)
      << "both ways off: each side's links carry its own messages";
  EXPECT_EQ(sched::hostRail(tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", "0.25"},
                                       {"CGDR_CUDA_HOST_RAIL_MIN_BOTH_WAYS", "8M"},
                                       {"CGDR_CUDA_HOST_RAIL_SHARE", "0"}}),
                            q),
            (254u << 20) / 4)
      << "both ways on where one way is off: its own share";
}

// The smallest message the rail takes, by pattern, whatever the offset leaves beyond it.
TEST_F(Sched, HostRailSmallestMessageByPattern) {
  sched::Table t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0.25"},
                              {"CGDR_CUDA_HOST_RAIL_OFFSET", "1M"},
                              {"CGDR_CUDA_HOST_RAIL_OFFSET_BW", "1M"},
                              {"CGDR_CUDA_HOST_RAIL_MIN", "40M"},
                              {"CGDR_CUDA_HOST_RAIL_MIN_BW", "34615353"}});  // 33 MiB + 12345
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kGpu, (33u << 20) + 12345, Pattern::kBandwidth, Caps{}};
  q.caps.otherGpu = true;
  EXPECT_EQ(sched::hostRail(t, q), 8u << 20) << "bandwidth-bound at its smallest message: a quarter beyond 1 MiB";
  q.bytes -= 1;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "bandwidth-bound one byte under its smallest message";
  q.pattern = Pattern::kLatency;
  q.bytes = (40u << 20) - 1;
  EXPECT_EQ(sched::hostRail(t, q), 0u) << "latency-bound under its smallest message";
  q.bytes = 40u << 20;
  EXPECT_EQ(sched::hostRail(t, q), (39u << 20) / 4) << "latency-bound from its smallest message: beyond the offset";
}

// The traffic the other way is looked for (a walk of the messages in flight) only where the rail
// would be taken one way or the other, and then decides.
TEST_F(Sched, HostRailAsksAboutTheOtherWayOnlyWhereTheSizeTakesIt) {
  const std::pair<std::string, std::string> both{"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", "0.09"};
  sched::Table t = tableWith({both});
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kGpu, 16u << 20, Pattern::kLatency, Caps{}};
  q.caps.otherGpu = true;
  int asked = 0;
  auto oneWay = [&] { ++asked; return false; };
  auto bothWays = [&] { ++asked; return true; };
  EXPECT_EQ(sched::hostRail(t, q, bothWays), 0u) << "latency-bound 16 MiB: NVLink alone";
  EXPECT_EQ(asked, 0) << "not asked where the size alone keeps the rail off";
  q.bytes = 32u << 20;
  Query b = q;
  b.bothWays = true;
  EXPECT_EQ(sched::hostRail(t, q, oneWay), sched::hostRail(t, q));
  EXPECT_EQ(asked, 1);
  EXPECT_GT(sched::hostRail(t, q, oneWay), 0u);
  EXPECT_EQ(sched::hostRail(t, q, bothWays), 0u) << "traffic both ways under 64 MiB: off";
  EXPECT_EQ(asked, 3);
  q.bytes = b.bytes = 64u << 20;
  EXPECT_EQ(sched::hostRail(t, q, bothWays), sched::hostRail(t, b)) << "traffic both ways from 64 MiB: its share";
  EXPECT_GT(sched::hostRail(t, b), 0u);
  EXPECT_NE(sched::hostRail(t, b), sched::hostRail(t, q));
  EXPECT_EQ(asked, 4);
  q.caps.otherGpu = false;
  EXPECT_EQ(sched::hostRail(t, q, bothWays), 0u);
  EXPECT_EQ(asked, 4) << "not asked on one GPU";
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0"}, {"CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE", "0"}, both});
  q.caps.otherGpu = true;
  EXPECT_EQ(sched::hostRail(t, q, oneWay), 0u) << "one way off";
  EXPECT_EQ(sched::hostRail(t, q, bothWays), sched::hostRail(t, b)) << "both ways still on";
  EXPECT_EQ(asked, 6) << "asked: the answer decides";
  t = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0.09"}, both});
  EXPECT_EQ(sched::hostRail(t, q), sched::hostRail(t, b)) << "the same share one way and both ways";
  EXPECT_EQ(sched::hostRail(t, q, bothWays), sched::hostRail(t, b));
  EXPECT_EQ(asked, 7) << "asked even where the tails agree: the answer picks the governor";
}

// The governor of the rail with traffic both ways: cut where a tail landed well after its NVLink
// part, raised where it landed first, held in between, within [kRailFactorMin, 1].
TEST(RailGovernor, CutsLateTailsAndRaisesEarlyOnes) {
  const std::int64_t push = 1'000'000;  // the NVLink part took 1 ms
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(1.0, push, push / 4 + 1), 0.85) << "a quarter late: cut";
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(1.0, push, push / 4), 1.0) << "up to a quarter late: held";
  EXPECT_TRUE(sched::railTailLate(push, push / 4 + 1));
  EXPECT_FALSE(sched::railTailLate(push, push / 4));
  EXPECT_FALSE(sched::railTailLate(push, -1)) << "first is not late";
  EXPECT_TRUE(sched::railTailLate(-5, 1)) << "a push of no measured time: any lateness is late";
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(0.5, push, 0), 0.5) << "landed together: held";
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(0.5, push, -1), 0.5 + 1.0 / 32) << "tail first: raised";
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(1.0, push, -1), 1.0) << "never above the table's share";
  double f = 1;
  for (int i = 0; i < 100; ++i) f = sched::railFactorAfter(f, push, 10 * push);
  EXPECT_DOUBLE_EQ(f, sched::kRailFactorMin) << "never below the floor";
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(f, push, -1), sched::kRailFactorMin + 1.0 / 32) << "and back up";
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(0.0, push, 0), sched::kRailFactorMin) << "an unset factor: the floor";
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(std::nan(""), push, 0), sched::kRailFactorMin);
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(7.0, push, 0), 1.0);
  EXPECT_DOUBLE_EQ(sched::railFactorAfter(1.0, -5, 1), 0.85) << "a clock step back: any lateness cuts";
  // The tail a factor leaves, in whole 64 KiB blocks.
  EXPECT_EQ(sched::governedTail(10u << 20, 1.0), 10u << 20);
  EXPECT_EQ(sched::governedTail(10u << 20, 0.5), 5u << 20);
  EXPECT_EQ(sched::governedTail(10u << 20, 0.3), (3u << 20) / 65536 * 65536);
  EXPECT_EQ(sched::governedTail(100000, 0.5), 0u) << "under one block: none";
  EXPECT_EQ(sched::governedTail(10u << 20, -1.0), 0u);
}

}  // namespace

// The scheduler: select() over the rule table for every peer class, memory-type pair, pattern and
// capability set, against an independent statement of the intended policy; switch points moved
// by settings (MV2_* aliases and the tuning file included); forced channels. The host rail beside
// a single copy: test_sched_rail.cc; the workload tracer: test_tracer.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "sched/select.hpp"
#include "sched_table.hpp"

using namespace cgdr;
using namespace cgdr_test;

namespace {

// The intended policy with default settings (shm eager limit 8 KiB, gdrcopy up to 8 KiB where it
// exists, GPU messages rendezvous and the receiver pulls with the best single-copy path).
Channel expected(const Query& q) {
  bool gpu = q.src != mem::MemKind::kHost;
  bool device = q.src == mem::MemKind::kDevice;
  if (q.dst == Dst::kPosted) {  // a receive advertised first: the sender copies into it at every size
    if (!device || !q.caps.contiguous) return Channel::kHostPipe;
    return q.caps.ipc ? Channel::kCudaIpc : q.caps.vmmZc ? Channel::kCudaVmmZc : Channel::kHostPipe;
  }
  if (!gpu) {
    if (q.bytes <= 8192) return Channel::kEager;
    if (q.dst == Dst::kUnknown) return Channel::kHostPipe;
    // Bandwidth-bound traffic: single copy up to 1 MiB, the chunk pipeline above.
    if (q.pattern == Pattern::kBandwidth && q.bytes > (1u << 20)) return Channel::kHostPipe;
    return q.caps.cma ? Channel::kCma : Channel::kHostPipe;
  }
  if (q.dst == Dst::kUnknown) {
    if (q.caps.gdrcopy && q.bytes <= 8192) return Channel::kGdrcopy;
    // A source the peer maps in place (exportable cuMem) always rendezvous for the single copy.
    if (device && q.caps.vmmZc && q.caps.contiguous) return Channel::kCudaVmmZc;
    // Across containers small GPU messages are staged through host memory (64 KiB by default,
    // capped later by the ring's eager limit); elsewhere they rendezvous for a single copy.
    if (q.peer == PeerClass::kContainer && q.bytes <= 65536) return Channel::kEager;
    return q.bytes == 0 ? Channel::kEager : Channel::kHostPipe;
  }
  if (q.peer == PeerClass::kSelf && q.caps.contiguous) return Channel::kSelf;
  if (device && q.caps.contiguous) {
    if (q.caps.ipc) return Channel::kCudaIpc;
    if (q.caps.vmmZc) return Channel::kCudaVmmZc;
    // Below 128 KiB the host pipeline beats the cuMem ring's two device copies; into a buffer on
    // the source's own GPU (two processes), below 4 MiB (2 MiB for bandwidth-bound traffic): there
    // the ring's device copies pay a context switch each, host staging's copy engines do not.
    std::size_t stageMin = 128 * 1024;
    if (q.sameGpu && q.dst == Dst::kGpu && q.peer != PeerClass::kSelf)
      stageMin = q.pattern == Pattern::kBandwidth ? 2u << 20 : 4u << 20;
    if (q.caps.vmmStage && q.bytes >= stageMin) return Channel::kCudaVmmStage;
  }
  return Channel::kHostPipe;
}

TEST_F(Sched, EveryPeerClassMemoryPairPatternAndCapabilitySet) {
  sched::Table t = tableWith({});
  const std::size_t sizes[] = {0,           1,       8191,        8192,    8193,        65536,  128 * 1024 - 1,
                               128 * 1024,  1 << 20, (1 << 20) + 1, (2 << 20) - 1, 2 << 20, (4 << 20) - 1, 4 << 20,
                               (8 << 20) - 1, 8 << 20, (8 << 20) + 1, (9 << 20) + 7, 16 << 20, (16 << 20) + 1,
                               (17 << 20) + 9, std::size_t{256} << 20};
  int checked = 0;
  for (int p = 0; p < static_cast<int>(PeerClass::kCount); ++p)
    for (mem::MemKind src : {mem::MemKind::kHost, mem::MemKind::kDevice, mem::MemKind::kManaged})
      for (Dst dst : {Dst::kUnknown, Dst::kHost, Dst::kGpu, Dst::kPosted})
        for (Pattern pat : {Pattern::kLatency, Pattern::kBandwidth})
          for (int capBits = 0; capBits < 1024; ++capBits)
            for (std::size_t n : sizes) {
              Query q{static_cast<PeerClass>(p), src, dst, n, pat, Caps{}};
              q.sameGpu = capBits & 64;  // who copies, and where the cuMem ring starts
              q.senderDrives = capBits & 128;
              q.caps.cma = capBits & 1;
              q.caps.ipc = capBits & 2;
              q.caps.vmmZc = capBits & 4;
              q.caps.vmmStage = capBits & 8;
              q.caps.gdrcopy = capBits & 16;
              q.caps.contiguous = !(capBits & 32);
              q.caps.otherGpu = capBits & 256;
              q.caps.otherGpuInvisible = capBits & 512;
              Channel got = sched::select(t, q);
              Channel want = expected(q);
              ASSERT_EQ(got, want) << "peer " << p << " src " << mem::kindName(src) << " dst " << int(dst)
                                   << " pattern " << int(pat) << " caps " << capBits << " bytes " << n << ": got "
                                   << sched::channelName(got) << ", expected " << sched::channelName(want);
              ASSERT_TRUE(sched::usable(got, q)) << sched::channelName(got);
              // A receive matched from its envelope: the sender copies device data into a GPU
              // buffer above 1 MiB (between two processes), the receiver pulls the rest; on one
              // GPU the pair's driver copies, whatever the size.
              bool push = src == mem::MemKind::kDevice && dst == Dst::kGpu && p != 0 &&
                          (q.sameGpu ? q.senderDrives : n > (1u << 20));
              ASSERT_EQ(sched::senderCopies(t, q), push) << "peer " << p << " dst " << int(dst) << " bytes " << n
                                                         << " same GPU " << q.sameGpu << " sender drives "
                                                         << q.senderDrives;
              // An advertised receive: claimed unless, on one GPU, the receiver drives (and can pull,
              // which the engine asks only then).
              ASSERT_EQ(sched::leaveToReceiver(t, q), q.sameGpu && !q.senderDrives && p != 0)
                  << "peer " << p << " caps " << capBits;
              // The host rail: 7 % of what exceeds 16 MiB for latency-bound traffic, of what exceeds
              // 2 MiB from 8 MiB on for bandwidth-bound (10 % where the other GPU is not visible),
              // in whole 64 KiB blocks, from device memory into a GPU buffer on another GPU
              // (contiguous, between two processes).
              std::size_t over = pat == Pattern::kLatency ? (n > (16u << 20) ? n - (16u << 20) : 0)
                                                          : (n >= (8u << 20) ? n - (2u << 20) : 0);
              std::size_t rail = src == mem::MemKind::kDevice && dst == Dst::kGpu && p != 0 && !q.sameGpu &&
                                         q.caps.otherGpu && q.caps.contiguous && over
                                     ? (q.caps.otherGpuInvisible ? over / 10 : over * 7 / 100) / 65536 * 65536
                                     : 0;
              ASSERT_EQ(sched::hostRail(t, q), rail) << "peer " << p << " caps " << capBits << " bytes " << n;
              // With GPU traffic the other way too: by default only where the other GPU is not
              // visible, 5 % of the same bytes from 64 MiB on.
              std::size_t railBoth = rail && q.caps.otherGpuInvisible && n >= (64u << 20)
                                         ? static_cast<std::size_t>(0.05 * static_cast<double>(over)) / 65536 * 65536
                                         : 0;
              q.bothWays = true;
              ASSERT_EQ(sched::hostRail(t, q), railBoth) << "both ways: peer " << p << " caps " << capBits << " bytes " << n;
              q.bothWays = false;
              ++checked;
            }
  EXPECT_EQ(checked, 3 * 3 * 4 * 2 * 1024 * 22);
}

TEST_F(Sched, ContainerPeersWithoutIpcUseTheCuMemPaths) {
  sched::Table t = tableWith({});
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kGpu, 8, Pattern::kLatency, Caps{}};
  q.caps.vmmStage = true;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);  // small: host staging is faster
  q.bytes = 128 * 1024;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmStage);
  q.bytes = 8;
  q.caps.vmmZc = true;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmZc);
  q.caps.contiguous = false;  // a sender never offers non-contiguous GPU data in place
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
}

TEST_F(Sched, AdvertLimitsPerPattern) {
  sched::Table t = tableWith({{"CGDR_CUDA_ADVERT_LIMIT", "64K"}, {"CGDR_CUDA_ADVERT_LIMIT_BW", "0"}});
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kPosted, 65536, Pattern::kLatency, Caps{}};
  q.caps.vmmZc = true;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmZc);
  q.bytes = 65537;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe) << "above the limit: the receiver pulls";
  q.bytes = 1;
  q.pattern = Pattern::kBandwidth;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe) << "limit 0: never for bandwidth-bound traffic";
  q.pattern = Pattern::kLatency;
  q.src = mem::MemKind::kManaged;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe) << "managed memory is not pushed";
  t = tableWith({});
  q.src = mem::MemKind::kDevice;
  q.bytes = std::size_t{1} << 20;
  q.caps.ipc = true;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
  q.pattern = Pattern::kBandwidth;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
  q.bytes = std::size_t{256} << 20;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc) << "by default the sender copies into every advertised receive";
  EXPECT_NE(t.describe().find("to posted GPU"), std::string::npos) << t.describe();
}

TEST_F(Sched, PullLimitPerPatternAndPeerClass) {
  sched::Table t = tableWith({{"CGDR_CUDA_PULL_LIMIT", "64K"}, {"CGDR_CUDA_PULL_LIMIT_BW", "0"}});
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kGpu, 65536, Pattern::kLatency, Caps{}};
  EXPECT_FALSE(sched::senderCopies(t, q)) << "up to the limit the receiver pulls";
  q.bytes = 65537;
  EXPECT_TRUE(sched::senderCopies(t, q)) << "above it the sender pushes";
  q.peer = PeerClass::kSameNamespace;
  EXPECT_TRUE(sched::senderCopies(t, q)) << "the same for peers in one namespace";
  q.peer = PeerClass::kSelf;
  EXPECT_FALSE(sched::senderCopies(t, q)) << "one process copies once anyway";
  q.peer = PeerClass::kContainer;
  q.bytes = 1;
  q.pattern = Pattern::kBandwidth;
  EXPECT_TRUE(sched::senderCopies(t, q)) << "limit 0: the sender copies every bandwidth-bound message";
  q.bytes = 0;
  EXPECT_FALSE(sched::senderCopies(t, q)) << "nothing to copy";
  q.bytes = 1;
  q.src = mem::MemKind::kManaged;
  EXPECT_FALSE(sched::senderCopies(t, q)) << "managed memory is not pushed";
  q.src = mem::MemKind::kDevice;
  q.dst = Dst::kHost;
  EXPECT_FALSE(sched::senderCopies(t, q)) << "only into GPU buffers";
  t = tableWith({});
  q.dst = Dst::kGpu;
  for (Pattern p : {Pattern::kLatency, Pattern::kBandwidth}) {
    q.pattern = p;
    q.bytes = std::size_t{1} << 20;
    EXPECT_FALSE(sched::senderCopies(t, q)) << "default: pulled up to 1 MiB";
    q.bytes += 1;
    EXPECT_TRUE(sched::senderCopies(t, q)) << "default: pushed above 1 MiB";
  }
  EXPECT_NE(t.describe().find("receiver pulls <=1048576, sender pushes above"), std::string::npos) << t.describe();
}

TEST_F(Sched, SameGpuTheDriverMakesEveryCopy) {
  sched::Table t = tableWith({});
  Query q{PeerClass::kSameNamespace, mem::MemKind::kDevice, Dst::kGpu, 8, Pattern::kLatency, Caps{}};
  q.sameGpu = true;
  q.senderDrives = true;
  EXPECT_TRUE(sched::senderCopies(t, q)) << "the driver pushes even below the pull limit";
  q.senderDrives = false;
  q.bytes = std::size_t{256} << 20;
  EXPECT_FALSE(sched::senderCopies(t, q)) << "the driver pulls even above the pull limit";
  q.dst = Dst::kPosted;
  EXPECT_TRUE(sched::leaveToReceiver(t, q)) << "an advert of the driver is left to it (where it can pull)";
  q.senderDrives = true;
  EXPECT_FALSE(sched::leaveToReceiver(t, q)) << "the driver claims";
  q.peer = PeerClass::kContainer;
  q.senderDrives = false;
  EXPECT_TRUE(sched::leaveToReceiver(t, q)) << "across containers the same";
  q.sameGpu = false;  // two GPUs, or one shared through MPS
  EXPECT_FALSE(sched::leaveToReceiver(t, q));
  q.sameGpu = true;
  EXPECT_NE(t.describe().find("same GPU used in turns (two processes, no MPS): the pair's lower world rank"), std::string::npos);
  // Off: as between two GPUs (the pull limit decides; adverts are claimed).
  t = tableWith({{"CGDR_CUDA_SAME_GPU_DRIVER", "0"}});
  EXPECT_FALSE(sched::leaveToReceiver(t, q));
  q.dst = Dst::kGpu;
  q.bytes = 8;
  q.senderDrives = true;
  EXPECT_FALSE(sched::senderCopies(t, q)) << "off: pulled up to the pull limit";
  q.bytes = (std::size_t{1} << 20) + 1;
  q.senderDrives = false;
  EXPECT_TRUE(sched::senderCopies(t, q)) << "off: pushed above it";
  EXPECT_NE(t.describe().find("same GPU (two processes): as between two GPUs"), std::string::npos);
}

TEST_F(Sched, IpcThresholdThroughTheMvapichAlias) {
  sched::Table t = tableWith({{"MV2_CUDA_IPC_THRESHOLD", "64K"}});
  Query q{PeerClass::kSameNamespace, mem::MemKind::kDevice, Dst::kGpu, 65535, Pattern::kLatency, Caps{}};
  q.caps.ipc = true;
  q.caps.vmmStage = true;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
  q.bytes = 65536;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
  // A receive posted first and advertised: below the threshold the sender leaves it to the
  // rendezvous (host staging) instead of copying into it; from the threshold on it copies. The
  // same for a peer in another container and exportable memory.
  for (PeerClass p : {PeerClass::kSameNamespace, PeerClass::kContainer}) {
    Query pq{p, mem::MemKind::kDevice, Dst::kPosted, 65535, Pattern::kLatency, Caps{}};
    pq.caps.ipc = p == PeerClass::kSameNamespace;
    pq.caps.vmmZc = true;
    EXPECT_EQ(sched::select(t, pq), Channel::kHostPipe) << "posted, below the IPC threshold";
    pq.bytes = 65536;
    EXPECT_EQ(sched::select(t, pq), pq.caps.ipc ? Channel::kCudaIpc : Channel::kCudaVmmZc) << "posted, at it";
  }
  // The bandwidth pattern keeps its own (default) switch point.
  q.pattern = Pattern::kBandwidth;
  q.bytes = 100;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
  q.dst = Dst::kPosted;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
}

TEST_F(Sched, TracerPatternPicksTheBandwidthSwitchPoints) {
  sched::Table t = tableWith({{"CGDR_CUDA_IPC_THRESHOLD_BW", "1M"}});
  Query q{PeerClass::kSameNamespace, mem::MemKind::kDevice, Dst::kHost, 512 * 1024, Pattern::kLatency, Caps{}};
  q.caps.ipc = true;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
  q.pattern = Pattern::kBandwidth;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
  q.bytes = 1 << 20;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
}

TEST_F(Sched, StageMinimumAndCudaEagerLimit) {
  sched::Table t = tableWith(
      {{"CGDR_CUDA_VMM_STAGE_MIN", "128K"}, {"CGDR_CUDA_EAGER_LIMIT", "4K"}, {"CGDR_CUDA_EAGER_LIMIT_CONTAINER", "0"}});
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kGpu, 1000, Pattern::kLatency, Caps{}};
  q.caps.vmmStage = true;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
  q.bytes = 128 * 1024;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmStage);
  q.dst = Dst::kUnknown;  // the sender's decision
  q.bytes = 4096;
  EXPECT_EQ(sched::select(t, q), Channel::kEager);
  q.bytes = 4097;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
}

TEST_F(Sched, SameGpuStageMinimumPerPatternAndSetting) {
  sched::Table t = tableWith({{"CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU", "1M"}, {"CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU_BW", "3M"}});
  for (PeerClass p : {PeerClass::kSameNamespace, PeerClass::kContainer}) {
    Query q{p, mem::MemKind::kDevice, Dst::kGpu, (1 << 20) - 1, Pattern::kLatency, Caps{}};
    q.caps.vmmStage = true;
    q.sameGpu = true;
    EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
    q.bytes = 1 << 20;
    EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmStage);
    q.pattern = Pattern::kBandwidth;
    EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
    q.bytes = 3 << 20;
    EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmStage);
    q.bytes = 128 * 1024;  // between two GPUs the ring starts at CGDR_CUDA_VMM_STAGE_MIN
    q.sameGpu = false;
    EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmStage);
    q.sameGpu = true;  // a host destination is never on the source's GPU: the ordinary rules
    q.dst = Dst::kHost;
    EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmStage);
    q.dst = Dst::kGpu;
    q.caps.ipc = true;  // a single-copy path still comes first
    EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
  }
  // One process: a direct copy, whatever the setting.
  Query s{PeerClass::kSelf, mem::MemKind::kDevice, Dst::kGpu, 1000, Pattern::kLatency, Caps{}};
  s.sameGpu = true;
  EXPECT_EQ(sched::select(t, s), Channel::kSelf);
  EXPECT_NE(t.describe().find("to GPU, same GPU  latency  : cuda-ipc cuda-vmm-zc <=1048575 host-pipeline"), std::string::npos)
      << t.describe();
}

TEST_F(Sched, ContainerPeersStageSmallGpuMessagesThroughHost) {
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kUnknown, 65536, Pattern::kLatency, Caps{}};
  EXPECT_EQ(sched::select(tableWith({}), q), Channel::kEager);
  q.bytes = 65537;
  EXPECT_EQ(sched::select(tableWith({}), q), Channel::kHostPipe);
  EXPECT_EQ(sched::select(tableWith({{"CGDR_CUDA_EAGER_LIMIT_CONTAINER", "1M"}}), q), Channel::kEager);
  q.peer = PeerClass::kSameNamespace;  // there the receiver pulls with one copy instead
  q.bytes = 8;
  EXPECT_EQ(sched::select(tableWith({}), q), Channel::kHostPipe);
}

TEST_F(Sched, ExportableSourcesRendezvousAcrossContainers) {
  sched::Table t = tableWith({});
  Query q{PeerClass::kContainer, mem::MemKind::kDevice, Dst::kUnknown, 8, Pattern::kLatency, Caps{}};
  EXPECT_EQ(sched::select(t, q), Channel::kEager);  // cudaMalloc memory: staged through the host
  q.caps.vmmZc = true;                               // exportable cuMem memory: zero copy
  EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmZc);
  q.src = mem::MemKind::kManaged;  // managed memory is never mapped by a peer
  EXPECT_EQ(sched::select(t, q), Channel::kEager);
  q.src = mem::MemKind::kDevice;
  q.caps.gdrcopy = true;  // a CPU copy through gdrcopy still wins for the smallest
  EXPECT_EQ(sched::select(t, q), Channel::kGdrcopy);
}

TEST_F(Sched, GdrcopyOnlyWhereItExistsAndUpToItsLimit) {
  sched::Table t = tableWith({{"MV2_GDRCOPY_LIMIT", "2K"}});
  Query q{PeerClass::kSameNamespace, mem::MemKind::kDevice, Dst::kUnknown, 2048, Pattern::kLatency, Caps{}};
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);  // no gdrdrv: never picked
  q.caps.gdrcopy = true;
  EXPECT_EQ(sched::select(t, q), Channel::kGdrcopy);
  q.bytes = 2049;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
}

TEST_F(Sched, ForcedChannelWhereThePairCanElseTheRules) {
  sched::Table t = tableWith({{"CGDR_FORCE_CHANNEL", "cuda-vmm-stage"}});
  EXPECT_EQ(t.forced, Channel::kCudaVmmStage);
  Query q{PeerClass::kSameNamespace, mem::MemKind::kDevice, Dst::kGpu, 8, Pattern::kLatency, Caps{}};
  q.caps.ipc = true;
  q.caps.vmmStage = true;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmStage);
  // A receive advertised first: where the pair has the ring, the forced channel beats the copy
  // into it (the sender declines the claim; the rendezvous takes the ring).
  q.dst = Dst::kPosted;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaVmmStage);
  q.dst = Dst::kGpu;
  q.caps.vmmStage = false;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
  q.src = mem::MemKind::kHost;  // host data: the stage ring is for device data only
  q.bytes = 100000;
  q.caps.cma = true;
  EXPECT_EQ(sched::select(t, q), Channel::kCma);
  EXPECT_NE(t.describe().find("forced channel: cuda-vmm-stage"), std::string::npos);
}

TEST_F(Sched, TuningFileSetsSwitchPoints) {
  std::string path = ::testing::TempDir() + "cgdr_sched_tuning.conf";
  {
    std::ofstream f(path);
    f << "# measured elsewhere\nCGDR_CUDA_IPC_THRESHOLD = 32K\nCGDR_SHM_EAGER_LIMIT=4K\n";
  }
  sched::Table t = tableWith({{"CGDR_TUNING_FILE", path}});
  Query q{PeerClass::kSameNamespace, mem::MemKind::kDevice, Dst::kGpu, 32767, Pattern::kLatency, Caps{}};
  q.caps.ipc = true;
  EXPECT_EQ(sched::select(t, q), Channel::kHostPipe);
  q.bytes = 32768;
  EXPECT_EQ(sched::select(t, q), Channel::kCudaIpc);
  Query h{PeerClass::kSameNamespace, mem::MemKind::kHost, Dst::kHost, 4097, Pattern::kLatency, Caps{}};
  EXPECT_EQ(sched::select(t, h), Channel::kHostPipe);
  h.bytes = 4096;
  EXPECT_EQ(sched::select(t, h), Channel::kEager);
  std::remove(path.c_str());
}

TEST_F(Sched, DescribeListsEveryRuleList) {
  sched::Table t = tableWith({});
  std::string d = t.describe();
  int lines = 0;
  for (char c : d) lines += c == '\n';
  // rule lists, the same-GPU lists of the two process classes, then their pull limits, then who
  // copies on one GPU
  EXPECT_EQ(lines, 1 + 3 * 2 * 4 * 2 + 2 * 2 + 2 * 2 + 1 + 1);  // + the host rail's line
  EXPECT_NE(d.find("one way: 0.070 (that GPU not visible here: 0.100) of the bytes beyond 16777216 of messages "
                   "from 0 bytes on (bandwidth-bound traffic: beyond 2097152, from 8388608 on) through host memory "
                   "beside it; both ways: 0.000 (0.050) from 67108864 bytes on, less where earlier tails landed "
                   "late\n"),
            std::string::npos) << d;
  std::string both = tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", "0.09"}}).describe();
  EXPECT_NE(both.find("through host memory beside it; both ways: 0.090 (0.050) from 67108864 bytes on, less where "
                      "earlier tails landed late\n"),
            std::string::npos) << both;
  EXPECT_NE(tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0"},
                       {"CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE", "0"},
                       {"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", "0"},
                       {"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS_INVISIBLE", "0"}})
                .describe()
                .find("no host rail"),
            std::string::npos);
  EXPECT_EQ(tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0"}, {"CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE", "0"}})
                .describe()
                .find("no host rail"),
            std::string::npos)
      << "both ways on by default where the other GPU is not visible";
  EXPECT_EQ(tableWith({{"CGDR_CUDA_HOST_RAIL_SHARE", "0"},
                       {"CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE", "0"},
                       {"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS_INVISIBLE", "0.09"}})
                .describe()
                .find("no host rail"),
            std::string::npos)
      << "both ways on";
  EXPECT_NE(d.find("cuda-ipc"), std::string::npos);
  EXPECT_NE(d.find("cuda-vmm-stage"), std::string::npos);
}

}  // namespace

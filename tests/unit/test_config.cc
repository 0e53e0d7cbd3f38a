// The settings registry: parsing, aliases, precedence (CGDR_ name > alias > tuning file >
// default), invalid values, and that every declared default parses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/config.hpp"
#include "base/log.hpp"
#include "channel/shm/endpoint.hpp"
#include "fake_env.hpp"

using namespace cgdr::base;

namespace {

Setting<long long> gCount("CGDR_TEST_COUNT", "7", "items", "test setting", {"MV2_TEST_COUNT"});
Setting<Bytes> gSize("CGDR_TEST_SIZE", "64K", "bytes", "test setting");
Setting<bool> gFlag("CGDR_TEST_FLAG", "0", "", "test setting", {"MV2_TEST_FLAG"});
Setting<long long> gRanged("CGDR_TEST_RANGED", "5", "items", "test setting", IntRange{-2, 10});
Setting<long long> gAtLeast("CGDR_TEST_AT_LEAST", "3", "items", "test setting", IntRange{1}, {"MV2_TEST_AT_LEAST"});
Setting<Bytes> gSized("CGDR_TEST_SIZED", "64K", "bytes", "test setting", SizeRange{4096, std::size_t{1} << 30});
Setting<Bytes> gSizeAtLeast("CGDR_TEST_SIZE_AT_LEAST", "1M", "bytes", "test setting", SizeRange{1000},
                            {"MV2_TEST_SIZE_AT_LEAST"});
Setting<Bytes> gSizeAtMost("CGDR_TEST_SIZE_AT_MOST", "0", "bytes", "test setting", SizeRange{0, 3 << 20});
Setting<double> gShare("CGDR_TEST_SHARE", "0.1", "fraction", "test setting", DoubleRange{0, 0.9});
Setting<double> gNumAtLeast("CGDR_TEST_NUM_AT_LEAST", "2", "us", "test setting", DoubleRange{0});
Setting<double> gNumAtMost("CGDR_TEST_NUM_AT_MOST", "-1", "us", "test setting", DoubleRange{-HUGE_VAL, 2.5});
ChoiceSetting gMode("CGDR_TEST_MODE", "container", {"container", "hostname", "off"}, "test setting");

using cgdr_test::fakeEnv;

SettingRow rowOf(const std::string& name) {
  for (auto& r : Registry::instance().rows())
    if (r.name == name) return r;
  return {};
}

// Resolves the settings from vars with warnings on and returns what was written to stderr.
std::string warningsOf(std::map<std::string, std::string> vars) {
  int level = logstate::level.exchange(static_cast<int>(LogLevel::kWarn));
  testing::internal::CaptureStderr();
  Registry::instance().resolveAll(fakeEnv(std::move(vars)));
  std::string err = testing::internal::GetCapturedStderr();
  logstate::level.store(level);
  return err;
}

}  // namespace

TEST(Parse, Bool) {
  for (const char* t : {"1", "yes", "ON", " true ", "y"}) EXPECT_EQ(parseBool(t), true) << t;
  for (const char* f : {"0", "no", "off", "FALSE", "n"}) EXPECT_EQ(parseBool(f), false) << f;
  for (const char* bad : {"", "2", "maybe", "1x"}) EXPECT_FALSE(parseBool(bad).has_value()) << bad;
}

TEST(Parse, Int) {
  EXPECT_EQ(parseInt("42"), 42);
  EXPECT_EQ(parseInt("-3"), -3);
  EXPECT_EQ(parseInt("0x10"), 16);
  EXPECT_FALSE(parseInt("12abc").has_value());
  EXPECT_FALSE(parseInt("").has_value());
  EXPECT_FALSE(parseInt("99999999999999999999999").has_value());
}

TEST(Parse, Bytes) {
  EXPECT_EQ(parseBytes("8192"), 8192u);
  EXPECT_EQ(parseBytes("64K"), 65536u);
  EXPECT_EQ(parseBytes("64KiB"), 65536u);
  EXPECT_EQ(parseBytes("4m"), 4u << 20);
  EXPECT_EQ(parseBytes("1G"), 1ull << 30);
  EXPECT_EQ(parseBytes("0"), 0u);
  EXPECT_FALSE(parseBytes("-1").has_value());
  EXPECT_FALSE(parseBytes("4X").has_value());
  EXPECT_FALSE(parseBytes("K").has_value());
  EXPECT_FALSE(parseBytes("99999999999999999999G").has_value());
}

TEST(Parse, Double) {
  EXPECT_DOUBLE_EQ(*parseDouble("1.5"), 1.5);
  EXPECT_FALSE(parseDouble("1.5s").has_value());
  EXPECT_FALSE(parseDouble("nan").has_value());
}

TEST(Registry, Defaults) {
  Registry::instance().resolveAll(fakeEnv({}));
  EXPECT_EQ(gCount.get(), 7);
  EXPECT_EQ(gSize.get().value, 65536u);
  EXPECT_FALSE(gFlag.get());
  EXPECT_EQ(gMode.get().name, "container");
  EXPECT_EQ(rowOf("CGDR_TEST_COUNT").source, "default");
}

TEST(Registry, EveryDeclaredDefaultParses) {
  EXPECT_TRUE(Registry::instance().badDefaults().empty());
  auto rows = Registry::instance().rows();
  EXPECT_GE(rows.size(), 8u);
  for (auto& r : rows) EXPECT_FALSE(r.help.empty()) << r.name << " has no help";
}

TEST(Registry, EnvironmentAndAliases) {
  Registry::instance().resolveAll(fakeEnv({{"MV2_TEST_COUNT", "11"}, {"CGDR_TEST_FLAG", "yes"}}));
  EXPECT_EQ(gCount.get(), 11);
  EXPECT_EQ(rowOf("CGDR_TEST_COUNT").source, "env MV2_TEST_COUNT (alias)");
  EXPECT_TRUE(gFlag.get());
  // The CGDR_ name wins over its alias.
  Registry::instance().resolveAll(fakeEnv({{"MV2_TEST_COUNT", "11"}, {"CGDR_TEST_COUNT", "12"}}));
  EXPECT_EQ(gCount.get(), 12);
  EXPECT_EQ(rowOf("CGDR_TEST_COUNT").source, "env CGDR_TEST_COUNT");
}

TEST(Registry, InvalidValueFallsBackToDefault) {
  Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_SIZE", "lots"}, {"CGDR_TEST_MODE", "pod"}}));
  EXPECT_EQ(gSize.get().value, 65536u);
  EXPECT_EQ(gMode.get().name, "container");
  EXPECT_EQ(rowOf("CGDR_TEST_SIZE").source, "default (env CGDR_TEST_SIZE invalid)");
}

TEST(Registry, IntegerOutsideItsRangeFallsBackToDefault) {
  for (const char* v : {"-2", "0", "10"}) {
    Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_RANGED", v}}));
    EXPECT_EQ(gRanged.get(), std::stoll(v)) << v;
    EXPECT_EQ(rowOf("CGDR_TEST_RANGED").source, "env CGDR_TEST_RANGED") << v;
  }
  for (const char* v : {"-3", "11", "-9223372036854775808"}) {
    Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_RANGED", v}}));
    EXPECT_EQ(gRanged.get(), 5) << v;
    EXPECT_EQ(rowOf("CGDR_TEST_RANGED").source, "default (env CGDR_TEST_RANGED invalid)") << v;
  }
  // The warning names the values the setting takes.
  std::string err = warningsOf({{"CGDR_TEST_RANGED", "11"}, {"MV2_TEST_AT_LEAST", "0"}});  // aliases too
  EXPECT_NE(err.find("CGDR_TEST_RANGED='11' is not valid (expected an integer from -2 to 10); using the default '5'"),
            std::string::npos) << err;
  EXPECT_NE(err.find("CGDR_TEST_AT_LEAST='0' is not valid (expected an integer of at least 1)"), std::string::npos)
      << err;
  EXPECT_EQ(gAtLeast.get(), 3);
  EXPECT_EQ(rowOf("CGDR_TEST_AT_LEAST").source, "default (env MV2_TEST_AT_LEAST (alias) invalid)");
  Registry::instance().resolveAll(fakeEnv({{"MV2_TEST_AT_LEAST", "9223372036854775807"}}));
  EXPECT_EQ(gAtLeast.get(), 9223372036854775807LL);
  Registry::instance().resolveAll(fakeEnv({}));
}

TEST(Registry, NumberOutsideItsRangeFallsBackToDefault) {
  for (auto [text, v] : {std::pair{"0", 0.0}, {"0.9", 0.9}, {"9e-1", 0.9}, {"0.45", 0.45}, {" 0.25 ", 0.25}}) {
    Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_SHARE", text}}));
    EXPECT_EQ(gShare.get(), v) << text;
    EXPECT_EQ(rowOf("CGDR_TEST_SHARE").source, "env CGDR_TEST_SHARE") << text;
  }
  for (const char* v : {"-0.01", "0.9000001", "1", "1e300", "inf", "nan", "0.5x"}) {
    Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_SHARE", v}}));
    EXPECT_EQ(gShare.get(), 0.1) << v;
    EXPECT_EQ(rowOf("CGDR_TEST_SHARE").source, "default (env CGDR_TEST_SHARE invalid)") << v;
  }
  // The warning names the numbers the setting takes.
  std::string err =
      warningsOf({{"CGDR_TEST_SHARE", "0.95"}, {"CGDR_TEST_NUM_AT_LEAST", "-3"}, {"CGDR_TEST_NUM_AT_MOST", "2.51"}});
  EXPECT_NE(err.find("CGDR_TEST_SHARE='0.95' is not valid (expected a number from 0 to 0.9); using the default '0.1'"),
            std::string::npos) << err;
  EXPECT_NE(err.find("CGDR_TEST_NUM_AT_LEAST='-3' is not valid (expected a number of at least 0)"), std::string::npos)
      << err;
  EXPECT_NE(err.find("CGDR_TEST_NUM_AT_MOST='2.51' is not valid (expected a number of at most 2.5)"),
            std::string::npos) << err;
  EXPECT_EQ(gNumAtLeast.get(), 2.0);
  EXPECT_EQ(gNumAtMost.get(), -1.0);
  Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_NUM_AT_LEAST", "1e9"}, {"CGDR_TEST_NUM_AT_MOST", "-1e9"}}));
  EXPECT_EQ(gNumAtLeast.get(), 1e9);
  EXPECT_EQ(gNumAtMost.get(), -1e9);
  Registry::instance().resolveAll(fakeEnv({}));
}

// What a setting takes, as cgdr-info and docs/settings.md show it: its range in words, nothing
// where it takes what its type does.
TEST(Registry, RowsSayWhatTheSettingTakes) {
  Registry::instance().resolveAll(fakeEnv({}));
  for (auto [name, range] : {std::pair{"CGDR_TEST_SHARE", "from 0 to 0.9"}, {"CGDR_TEST_NUM_AT_LEAST", "at least 0"},
                             {"CGDR_TEST_NUM_AT_MOST", "at most 2.5"}, {"CGDR_TEST_RANGED", "from -2 to 10"},
                             {"CGDR_TEST_AT_LEAST", "at least 1"}, {"CGDR_TEST_SIZED", "from 4K to 1G"},
                             {"CGDR_TEST_SIZE_AT_LEAST", "at least 1000"}, {"CGDR_TEST_SIZE_AT_MOST", "at most 3M"},
                             {"CGDR_TEST_COUNT", ""}, {"CGDR_TEST_SIZE", ""}, {"CGDR_TEST_FLAG", ""},
                             {"CGDR_TEST_MODE", ""}, {"CGDR_CUDA_RESIDENT_IDLE", "from 1 to 10000000"},
                             {"CGDR_CUDA_RESIDENT_BLOCKS", "from 1 to 32"}, {"CGDR_SHM_RING_BYTES", "from 4K to 1G"}})
    EXPECT_EQ(rowOf(name).range, range) << name;
}

// The library's number settings with ranges: a value outside is refused with a warning (before,
// each was clamped where it was read, without a word: a rail share of 2 became 0.9, an idle time
// of 0 became 1 us, a negative wait 0; a negative CGDR_POLL_SPINS, cast to unsigned, meant a waiting
// call never yielded the CPU).
TEST(Registry, LibraryNumbersTakeTheirRanges) {
  struct Case {
    const char* name;
    std::vector<const char*> good, bad;
  };
  const std::vector<Case> cases = {
      {"CGDR_CUDA_HOST_RAIL_SHARE", {"0", "0.9", "0.37"}, {"-0.1", "0.91", "2"}},
      {"CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE", {"0", "0.9"}, {"-1", "0.95"}},
      {"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", {"0", "0.09"}, {"-0.5", "1"}},
      {"CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS_INVISIBLE", {"0", "0.05"}, {"-0.05", "3"}},
      {"CGDR_TRACE_THRESHOLD", {"0", "0.5", "1"}, {"-0.1", "1.01"}},
      {"CGDR_CUDA_ADVERT_WAIT", {"0", "10", "100000"}, {"-1", "2e6"}},
      {"CGDR_CUDA_RESIDENT_IDLE", {"1", "2", "1000000"}, {"0", "0.5", "-20", "1e8"}},
      {"CGDR_CUDA_RESIDENT_BACKOFF", {"0", "2000"}, {"-1", "1e7"}},
      {"CGDR_CUDA_RESIDENT_START_WAIT", {"0", "30", "1000"}, {"-1", "1000.5"}},
      {"CGDR_POLL_SPINS", {"0", "64", "1000000"}, {"-1", "-64", "1.5"}},
  };
  for (const Case& c : cases) {
    for (const char* v : c.good) {
      Registry::instance().resolveAll(fakeEnv({{c.name, v}}));
      EXPECT_EQ(rowOf(c.name).source, std::string("env ") + c.name) << c.name << "=" << v;
    }
    for (const char* v : c.bad) {
      Registry::instance().resolveAll(fakeEnv({{c.name, v}}));
      EXPECT_EQ(rowOf(c.name).source, std::string("default (env ") + c.name + " invalid)") << c.name << "=" << v;
    }
  }
  Registry::instance().resolveAll(fakeEnv({}));
}

// The library's own ranged settings (the unit tests link all of cgdr's core): the resident kernel's
// blocks (1 to 32; before, a value outside was clamped without a word).
TEST(Registry, ResidentBlocksTakeOneTo32) {
  for (const char* v : {"1", "32"}) {
    Registry::instance().resolveAll(fakeEnv({{"CGDR_CUDA_RESIDENT_BLOCKS", v}}));
    EXPECT_EQ(rowOf("CGDR_CUDA_RESIDENT_BLOCKS").value, v);
    EXPECT_EQ(rowOf("CGDR_CUDA_RESIDENT_BLOCKS").source, "env CGDR_CUDA_RESIDENT_BLOCKS");
  }
  for (const char* v : {"0", "33", "-1"}) {
    Registry::instance().resolveAll(fakeEnv({{"CGDR_CUDA_RESIDENT_BLOCKS", v}}));
    EXPECT_EQ(rowOf("CGDR_CUDA_RESIDENT_BLOCKS").value, "1") << v;
    EXPECT_EQ(rowOf("CGDR_CUDA_RESIDENT_BLOCKS").source, "default (env CGDR_CUDA_RESIDENT_BLOCKS invalid)") << v;
  }
  Registry::instance().resolveAll(fakeEnv({}));
}

TEST(Registry, SizeOutsideItsRangeFallsBackToDefault) {
  for (auto [text, bytes] : {std::pair{"4K", 4096ull}, {"4096", 4096ull}, {"1G", 1ull << 30},
                             {"1073741824", 1ull << 30}, {"65537", 65537ull}}) {
    Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_SIZED", text}}));
    EXPECT_EQ(gSized.get().value, bytes) << text;
    EXPECT_EQ(rowOf("CGDR_TEST_SIZED").source, "env CGDR_TEST_SIZED") << text;
  }
  for (const char* v : {"4095", "0", "1073741825", "2G", "16G"}) {
    Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_SIZED", v}}));
    EXPECT_EQ(gSized.get().value, 65536u) << v;
    EXPECT_EQ(rowOf("CGDR_TEST_SIZED").source, "default (env CGDR_TEST_SIZED invalid)") << v;
  }
  // The warning names the sizes the setting takes, as a user would write them where a suffix fits.
  std::string err =
      warningsOf({{"CGDR_TEST_SIZED", "2G"}, {"MV2_TEST_SIZE_AT_LEAST", "999"}, {"CGDR_TEST_SIZE_AT_MOST", "3145729"}});
  EXPECT_NE(err.find("CGDR_TEST_SIZED='2G' is not valid (expected a size from 4K to 1G); using the default '64K'"),
            std::string::npos) << err;
  EXPECT_NE(err.find("CGDR_TEST_SIZE_AT_LEAST='999' is not valid (expected a size of at least 1000)"),
            std::string::npos) << err;
  EXPECT_NE(err.find("CGDR_TEST_SIZE_AT_MOST='3145729' is not valid (expected a size of at most 3M)"),
            std::string::npos) << err;
  EXPECT_EQ(gSizeAtLeast.get().value, 1u << 20);
  EXPECT_EQ(rowOf("CGDR_TEST_SIZE_AT_LEAST").source, "default (env MV2_TEST_SIZE_AT_LEAST (alias) invalid)");
  EXPECT_EQ(gSizeAtMost.get().value, 0u);
  Registry::instance().resolveAll(fakeEnv({{"MV2_TEST_SIZE_AT_LEAST", "16G"}, {"CGDR_TEST_SIZE_AT_MOST", "3M"}}));
  EXPECT_EQ(gSizeAtLeast.get().value, std::size_t{16} << 30);
  EXPECT_EQ(gSizeAtMost.get().value, 3u << 20);
  Registry::instance().resolveAll(fakeEnv({}));
}

// The shared-memory segment's geometry (the host channel's and cuda-staged's chunks, the cuMem
// staging ring's slots): a value past its range is refused, not cut to 32 bits (before, a ring or
// chunk of 4G became 0 bytes: a division by zero, or records no peer could match).
TEST(Registry, SegmentGeometryTakesItsRanges) {
  namespace shm = cgdr::channel::shm;
  Registry::instance().resolveAll(fakeEnv({}));
  shm::Config d = shm::configFromSettings();
  EXPECT_EQ(d.ringBytes, 65536u);
  EXPECT_EQ(d.chunkBytes, 262144u);
  Registry::instance().resolveAll(fakeEnv({{"CGDR_SHM_RING_BYTES", "4G"}, {"CGDR_SHM_CHUNK_BYTES", "4G"},
                                           {"CGDR_SHM_CHUNKS", "4294967298"}, {"CGDR_SHM_CTL_SLOTS", "4294967297"},
                                           {"CGDR_CUDA_STAGE_SLOTS", "1"}, {"CGDR_SHM_DESC_SLOTS", "-5"},
                                           {"MV2_CUDA_BLOCK_SIZE", "8G"}}));
  shm::Config bad = shm::configFromSettings();
  EXPECT_EQ(bad.ringBytes, d.ringBytes);
  EXPECT_EQ(bad.chunkBytes, d.chunkBytes);
  EXPECT_EQ(bad.chunks, 64u);
  EXPECT_EQ(bad.ctlSlots, 256u);
  EXPECT_EQ(bad.devSlots, 4u);
  EXPECT_EQ(bad.descSlots, 256u);
  EXPECT_EQ(rowOf("CGDR_CUDA_BLOCK_SIZE").value, std::to_string(16u << 20));
  EXPECT_EQ(rowOf("CGDR_CUDA_BLOCK_SIZE").source, "default (env MV2_CUDA_BLOCK_SIZE (alias) invalid)");
  // The bounds themselves are taken (sizes rounded down to a multiple of 64).
  Registry::instance().resolveAll(fakeEnv({{"CGDR_SHM_RING_BYTES", "1G"}, {"CGDR_SHM_CHUNK_BYTES", "4100"},
                                           {"CGDR_SHM_CHUNKS", "65536"}, {"CGDR_SHM_CTL_SLOTS", "16"},
                                           {"CGDR_CUDA_STAGE_SLOTS", "4096"}, {"CGDR_SHM_DESC_SLOTS", "0"},
                                           {"MV2_CUDA_BLOCK_SIZE", "4G"}}));
  shm::Config first = shm::configFromSettings();
  EXPECT_EQ(first.ringBytes, 1u << 30);
  EXPECT_EQ(first.chunkBytes, 4096u);
  EXPECT_EQ(first.chunks, 65536u);
  EXPECT_EQ(first.ctlSlots, 16u);
  EXPECT_EQ(first.devSlots, 4096u);
  EXPECT_EQ(first.descSlots, 0u);
  EXPECT_EQ(rowOf("CGDR_CUDA_BLOCK_SIZE").value, std::to_string(4ull << 30));
  Registry::instance().resolveAll(fakeEnv({{"CGDR_SHM_RING_BYTES", "4K"}, {"CGDR_SHM_CHUNK_BYTES", "1G"},
                                           {"CGDR_SHM_CHUNKS", "2"}, {"CGDR_SHM_CTL_SLOTS", "1048576"},
                                           {"CGDR_CUDA_STAGE_SLOTS", "2"}, {"CGDR_SHM_DESC_SLOTS", "65536"}}));
  shm::Config second = shm::configFromSettings();
  EXPECT_EQ(second.ringBytes, 4096u);
  EXPECT_EQ(second.chunkBytes, 1u << 30);
  EXPECT_EQ(second.chunks, 2u);
  EXPECT_EQ(second.ctlSlots, 1u << 20);
  EXPECT_EQ(second.devSlots, 2u);
  EXPECT_EQ(second.descSlots, 65536u);
  Registry::instance().resolveAll(fakeEnv({}));
}

// A tuning file of the given text under /tmp, removed at the end of the scope.
struct TuningFile {
  explicit TuningFile(const char* text) {
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    if (fd >= 0) close(fd);
    std::ofstream(path) << text;
  }
  ~TuningFile() { std::remove(path); }
  char path[32] = "/tmp/cgdr-tuning-XXXXXX";
};

TEST(Registry, TuningFileBelowEnvironment) {
  TuningFile file("# comment\nCGDR_TEST_COUNT = 21\nMV2_TEST_FLAG=1\nnot a line\nCGDR_TEST_SIZE = 2M # trailing\n");
  Registry::instance().resolveAll(fakeEnv({{"CGDR_TUNING_FILE", file.path}, {"CGDR_TEST_SIZE", "1K"}}));
  EXPECT_EQ(gCount.get(), 21);
  EXPECT_TRUE(gFlag.get());
  EXPECT_EQ(gSize.get().value, 1024u);  // environment beats the file
  EXPECT_EQ(rowOf("CGDR_TEST_COUNT").source, "tuning file");
  Registry::instance().resolveAll(fakeEnv({}));
}

// Names in the tuning file that no setting declares (by name or alias) are collected for the start-up
// warning; the file's known names are in force beside them.
TEST(Registry, TuningFileUnknownNames) {
  TuningFile file("CGDR_TEST_CUONT = 3\nMV2_TEST_COUNT = 9\nCGDR_TEST_FLAG = 1\n= 4\nMV2_NO_SUCH = x\n");
  Registry::instance().resolveAll(fakeEnv({{"CGDR_TUNING_FILE", file.path}}));
  EXPECT_EQ(gCount.get(), 9);
  EXPECT_TRUE(gFlag.get());
  EXPECT_EQ(Registry::instance().unknownTuningFileNames(),
            (std::vector<std::string>{"CGDR_TEST_CUONT", "MV2_NO_SUCH"}));
  Registry::instance().resolveAll(fakeEnv({}));
  EXPECT_TRUE(Registry::instance().unknownTuningFileNames().empty());
}

// CGDR_* variables of the process that no setting declares are reported; declared ones are not.
TEST(Registry, UnknownCgdrVariables) {
  ASSERT_EQ(setenv("CGDR_TEST_NO_SUCH_SETTING", "1", 1), 0);
  ASSERT_EQ(setenv("CGDR_TEST_COUNT", "5", 1), 0);
  auto unknown = Registry::instance().unknownCgdrVariables();
  unsetenv("CGDR_TEST_NO_SUCH_SETTING");
  unsetenv("CGDR_TEST_COUNT");
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), "CGDR_TEST_NO_SUCH_SETTING"), unknown.end());
  EXPECT_EQ(std::find(unknown.begin(), unknown.end(), "CGDR_TEST_COUNT"), unknown.end());
}

TEST(Log, Subsystems) {
  std::uint32_t m = 0;
  EXPECT_TRUE(parseSubsystems("all", &m));
  EXPECT_EQ(m, ~0u);
  EXPECT_TRUE(parseSubsystems("p2p,shm", &m));
  EXPECT_EQ(m, static_cast<std::uint32_t>(Subsys::kP2p) | static_cast<std::uint32_t>(Subsys::kShm));
  EXPECT_FALSE(parseSubsystems("p2p,nosuch", &m));
}

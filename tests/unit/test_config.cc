// The settings registry: parsing, aliases, precedence (CGDR_ name > alias > tuning file >
// default), invalid values, and that every declared default parses.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "base/config.hpp"
#include "base/log.hpp"

using namespace cgdr::base;

namespace {

Setting<long long> gCount("CGDR_TEST_COUNT", "7", "items", "test setting", {"MV2_TEST_COUNT"});
Setting<Bytes> gSize("CGDR_TEST_SIZE", "64K", "bytes", "test setting");
Setting<bool> gFlag("CGDR_TEST_FLAG", "0", "", "test setting", {"MV2_TEST_FLAG"});
Setting<long long> gRanged("CGDR_TEST_RANGED", "5", "items", "test setting", IntRange{-2, 10});
Setting<long long> gAtLeast("CGDR_TEST_AT_LEAST", "3", "items", "test setting", IntRange{1}, {"MV2_TEST_AT_LEAST"});
ChoiceSetting gMode("CGDR_TEST_MODE", "container", {"container", "hostname", "off"}, "test setting");

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

SettingRow rowOf(const std::string& name) {
  for (auto& r : Registry::instance().rows())
    if (r.name == name) return r;
  return {};
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
  int level = logstate::level.exchange(static_cast<int>(LogLevel::kWarn));
  testing::internal::CaptureStderr();
  Registry::instance().resolveAll(fakeEnv({{"CGDR_TEST_RANGED", "11"}, {"MV2_TEST_AT_LEAST", "0"}}));  // aliases too
  std::string err = testing::internal::GetCapturedStderr();
  logstate::level.store(level);
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

TEST(Registry, TuningFileBelowEnvironment) {
  char path[] = "/tmp/cgdr-tuning-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  {
    std::ofstream f(path);
    f << "# comment\nCGDR_TEST_COUNT = 21\nMV2_TEST_FLAG=1\nnot a line\nCGDR_TEST_SIZE = 2M # trailing\n";
  }
  Registry::instance().resolveAll(fakeEnv({{"CGDR_TUNING_FILE", path}, {"CGDR_TEST_SIZE", "1K"}}));
  EXPECT_EQ(gCount.get(), 21);
  EXPECT_TRUE(gFlag.get());
  EXPECT_EQ(gSize.get().value, 1024u);  // environment beats the file
  EXPECT_EQ(rowOf("CGDR_TEST_COUNT").source, "tuning file");
  close(fd);
  std::remove(path);
  Registry::instance().resolveAll(fakeEnv({}));
}

TEST(Log, Subsystems) {
  std::uint32_t m = 0;
  EXPECT_TRUE(parseSubsystems("all", &m));
  EXPECT_EQ(m, ~0u);
  EXPECT_TRUE(parseSubsystems("p2p,shm", &m));
  EXPECT_EQ(m, static_cast<std::uint32_t>(Subsys::kP2p) | static_cast<std::uint32_t>(Subsys::kShm));
  EXPECT_FALSE(parseSubsystems("p2p,nosuch", &m));
}

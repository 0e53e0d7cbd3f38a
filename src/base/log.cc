#include "base/log.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <unistd.h>

#include "base/config.hpp"

namespace cgdr::base {
namespace logstate {
std::atomic<int> level{static_cast<int>(LogLevel::kWarn)};
std::atomic<std::uint32_t> subsystems{~0u};
}  // namespace logstate

namespace {
std::atomic<int> gRank{-1};

ChoiceSetting gLevel("CGDR_LOG_LEVEL", "warn", {"error", "warn", "info", "debug", "trace"},
                     "Least severe log level printed.");
Setting<std::string> gSubsys("CGDR_LOG_SUBSYS", "all", "list",
                             "Subsystems to log: all or a comma list of init,mem,cuda,p2p,coll,"
                             "topo,shm,sched,engine,tool.");

const char* kLevelNames[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
const struct {
  const char* name;
  Subsys bit;
} kSubsysNames[] = {{"init", Subsys::kInit},   {"mem", Subsys::kMem},   {"cuda", Subsys::kCuda},
                    {"p2p", Subsys::kP2p},     {"coll", Subsys::kColl}, {"topo", Subsys::kTopo},
                    {"shm", Subsys::kShm},     {"sched", Subsys::kSched},
                    {"engine", Subsys::kEngine}, {"tool", Subsys::kTool}};

const char* subsysName(Subsys s) {
  for (const auto& n : kSubsysNames)
    if (n.bit == s) return n.name;
  return "?";
}
}  // namespace

bool parseSubsystems(const std::string& text, std::uint32_t* mask) {
  std::uint32_t m = 0;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (item == "all") {
      m = ~0u;
      continue;
    }
    bool found = false;
    for (const auto& n : kSubsysNames) {
      if (item == n.name) {
        m |= static_cast<std::uint32_t>(n.bit);
        found = true;
      }
    }
    if (!found) return false;
  }
  *mask = m;
  return true;
}

void logConfigureFromSettings() {
  logstate::level.store(gLevel.get().index);
  std::uint32_t mask = ~0u;
  if (!parseSubsystems(gSubsys.get(), &mask)) {
    logWrite(LogLevel::kWarn, Subsys::kInit, "CGDR_LOG_SUBSYS='%s' names an unknown subsystem",
             gSubsys.get().c_str());
    mask = ~0u;
  }
  logstate::subsystems.store(mask);
}

void logSetRank(int rank) { gRank.store(rank); }
int logRank() { return gRank.load(); }

void logWrite(LogLevel l, Subsys s, const char* fmt, ...) {
  static char host[64] = {};
  if (!host[0]) {
    if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  }
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char line[1200];
  int n = snprintf(line, sizeof line, "%s:%d:%d cgdr %s %s: %s\n", host, static_cast<int>(getpid()),
                   gRank.load(), kLevelNames[static_cast<int>(l)], subsysName(s), msg);
  if (n > 0) {
    ssize_t w = write(STDERR_FILENO, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
    (void)w;
  }
}

}  // namespace cgdr::base

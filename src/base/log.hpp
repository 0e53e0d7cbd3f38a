// Logging with levels and subsystems; every line is prefixed host:pid:rank.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace cgdr::base {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

// Subsystems, as bits so a filter can name several.
enum class Subsys : std::uint32_t {
  kInit = 1u << 0,
  kMem = 1u << 1,
  kCuda = 1u << 2,
  kP2p = 1u << 3,
  kColl = 1u << 4,
  kTopo = 1u << 5,
  kShm = 1u << 6,
  kSched = 1u << 7,
  kEngine = 1u << 8,
  kTool = 1u << 9,
};

namespace logstate {
extern std::atomic<int> level;
extern std::atomic<std::uint32_t> subsystems;
}  // namespace logstate

inline bool logEnabled(LogLevel l, Subsys s) {
  return static_cast<int>(l) <= logstate::level.load(std::memory_order_relaxed) &&
         (static_cast<std::uint32_t>(s) & logstate::subsystems.load(std::memory_order_relaxed));
}

// Writes one line to stderr (errors are always written whatever the subsystem filter).
void logWrite(LogLevel l, Subsys s, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

// Applies CGDR_LOG_LEVEL / CGDR_LOG_SUBSYS (called once the settings are resolved).
void logConfigureFromSettings();
// Sets the rank printed in the prefix (-1 before MPI_Init).
void logSetRank(int rank);
// The world rank logSetRank gave (-1 before it).
int logRank();
// Parses a comma-separated subsystem list ("all", "p2p,shm"); returns false on unknown names.
bool parseSubsystems(const std::string& text, std::uint32_t* mask);

}  // namespace cgdr::base

#define CGDR_LOG(level, subsys, ...)                                                        \
  do {                                                                                      \
    if (::cgdr::base::logEnabled(::cgdr::base::LogLevel::level,                             \
                                 ::cgdr::base::Subsys::subsys) ||                           \
        ::cgdr::base::LogLevel::level == ::cgdr::base::LogLevel::kError)                    \
      ::cgdr::base::logWrite(::cgdr::base::LogLevel::level, ::cgdr::base::Subsys::subsys,   \
                             __VA_ARGS__);                                                  \
  } while (0)

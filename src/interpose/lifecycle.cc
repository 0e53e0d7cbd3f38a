#include "interpose/lifecycle.hpp"

#include <vector>

namespace cgdr::interpose {
namespace {
std::vector<std::function<void()>>& initHooks() {
  static std::vector<std::function<void()>> v;
  return v;
}
std::vector<std::function<void()>>& finalizeHooks() {
  static std::vector<std::function<void()>> v;
  return v;
}
}  // namespace

void addInitHook(std::function<void()> f) { initHooks().push_back(std::move(f)); }
void addFinalizeHook(std::function<void()> f) { finalizeHooks().push_back(std::move(f)); }
void runInitHooks() {
  for (auto& f : initHooks()) f();
}
void runFinalizeHooks() {
  auto& v = finalizeHooks();
  for (auto it = v.rbegin(); it != v.rend(); ++it) (*it)();
}

}  // namespace cgdr::interpose

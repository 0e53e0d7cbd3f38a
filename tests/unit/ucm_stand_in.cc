// A library exporting libucm's event subscription (the public ABI cgdr uses, ucm/api/ucm.h), so a
// test can load "UCX's memory hooks" into the process after cgdr looked for them and missed.
#include <cstddef>

namespace {
struct VmEvent {
  void* address;
  std::size_t size;
};
using Callback = void (*)(int type, VmEvent* event, void* arg);
Callback gCallback = nullptr;
void* gArg = nullptr;
int gEvents = 0;
}  // namespace

extern "C" __attribute__((visibility("default"))) int ucm_set_event_handler(int events, int, Callback cb, void* arg) {
  gEvents = events;
  gCallback = cb;
  gArg = arg;
  return 0;
}

// What the test asks: the events subscribed to, and an event delivered as libucm would.
extern "C" __attribute__((visibility("default"))) int cgdr_test_ucm_events() { return gEvents; }

extern "C" __attribute__((visibility("default"))) void cgdr_test_ucm_fire(int type, void* address, std::size_t size) {
  VmEvent e{address, size};
  if (gCallback) gCallback(type, &e, gArg);
}

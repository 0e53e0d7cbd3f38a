#include "engine/helper.hpp"

#include <time.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/shm_engine.hpp"

namespace cgdr::engine {
namespace {

struct Helper {
  std::mutex mutex;
  std::condition_variable cv;
  std::thread thread;
  int blocked = 0;
  bool stop = false;
  bool started = false;
};

Helper& helper() {
  static Helper* h = new Helper;
  return *h;
}

void run() {
  Helper& h = helper();
  std::unique_lock lock(h.mutex);
  while (!h.stop) {
    h.cv.wait(lock, [&] { return h.stop || h.blocked > 0; });
    int idle = 0;
    while (!h.stop && h.blocked > 0) {
      lock.unlock();
      ShmEngine* e = ShmEngine::get();
      bool worked = e && e->progressShm();
      if (worked) {
        idle = 0;
      } else if (++idle > 64) {
        timespec ts{0, 20000};  // 20 us: cheap on an oversubscribed host, quick enough otherwise
        nanosleep(&ts, nullptr);
      }
      lock.lock();
    }
  }
}

}  // namespace

BlockingScope::BlockingScope() {
  ShmEngine* e = ShmEngine::get();
  if (!e || !e->busy()) return;
  Helper& h = helper();
  std::lock_guard lock(h.mutex);
  if (!h.started) {
    h.thread = std::thread(run);
    h.started = true;
  }
  ++h.blocked;
  active_ = true;
  h.cv.notify_one();
}

BlockingScope::~BlockingScope() {
  if (!active_) return;
  Helper& h = helper();
  std::lock_guard lock(h.mutex);
  --h.blocked;
}

void stopHelper() {
  Helper& h = helper();
  {
    std::lock_guard lock(h.mutex);
    if (!h.started) return;
    h.stop = true;
    h.cv.notify_all();
  }
  h.thread.join();
  std::lock_guard lock(h.mutex);
  h.started = false;
  h.stop = false;
}

}  // namespace cgdr::engine

#include "channel/gdrcopy/gdrcopy.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include "base/config.hpp"
#include "base/cuda.hpp"

namespace cgdr::channel::gdrcopy {
namespace {

base::Setting<std::string> gLib("CGDR_GDRCOPY_LIB", "libgdrapi.so.2", "path",
                                "The gdrcopy library (libgdrapi) to load.", {"MV2_GPUDIRECT_GDRCOPY_LIB"});

struct State {
  bool ok = false;
  std::string why;
};

const State& state() {
  static const State s = [] {
    State st;
    if (!base::cuda::usable()) {
      st.why = "no usable GPU";
    } else if (access("/dev/gdrdrv", R_OK | W_OK) != 0) {
      st.why = "the gdrdrv kernel module is not loaded (/dev/gdrdrv missing)";
    } else if (void* h = dlopen(gLib.get().c_str(), RTLD_NOW | RTLD_LOCAL); !h) {
      st.why = "cannot load " + gLib.get() + ": " + dlerror();
    } else {
      using OpenFn = void* (*)();
      auto open = reinterpret_cast<OpenFn>(dlsym(h, "gdr_open"));
      if (!open) st.why = gLib.get() + " has no gdr_open";
      else if (!open()) st.why = "gdr_open failed";
      else st.ok = true;
    }
    return st;
  }();
  return s;
}

}  // namespace

bool available() { return state().ok; }
const std::string& whyNot() { return state().why; }

}  // namespace cgdr::channel::gdrcopy

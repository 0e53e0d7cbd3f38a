// gdrcopy: small GPU buffers read and written by the CPU through a mapping of GPU memory, where
// the gdrdrv kernel module and libgdrapi exist (CGDR_GDRCOPY_LIB, alias MV2_GPUDIRECT_GDRCOPY_LIB).
// Without them the scheduler never picks it, and cgdr-info says why.
#pragma once
#include <string>

namespace cgdr::channel::gdrcopy {

// True when libgdrapi loads, /dev/gdrdrv exists and gdr_open() succeeds.
bool available();
// Why it is not available ("" when it is).
const std::string& whyNot();

}  // namespace cgdr::channel::gdrcopy

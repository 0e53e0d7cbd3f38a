// Components that need work at MPI_Init/MPI_Finalize register hooks here (no static order).
#pragma once
#include <functional>

namespace cgdr::interpose {

// Runs after the real MPI and cgdr's base are initialized; hooks run in registration order.
void addInitHook(std::function<void()> f);
// Runs before the real MPI is finalized, in reverse registration order.
void addFinalizeHook(std::function<void()> f);
void runInitHooks();
void runFinalizeHooks();

}  // namespace cgdr::interpose

# Sourced where tests run built with AddressSanitizer and UBSan (scripts/test.sh,
# bench/gpu-suite.sh). verify_asan_link_order=0: the cgdr variants preload libcgdr.so ahead of the
# runtime that the test program links; protect_shadow_gap=0: the CUDA driver maps memory where
# ASan would protect it; detect_leaks=0: the MPIs unload their components with dlclose, so their
# allocations at exit would be reported on every run.
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:protect_shadow_gap=0
export UBSAN_OPTIONS=print_stacktrace=1

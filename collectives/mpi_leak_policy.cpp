// Built into the binaries that start MPI (bench_ccl, bench_fsdp). Under AddressSanitizer only:
// LeakSanitizer is off by default in them, because Open MPI allocates in components it
// dlopen()s and unloads again before the leak report runs, so those allocations show as leaks
// of "<unknown module>" that no suppression can name. ASan's memory checks and UBSan stay on.
// Every other binary keeps the leak check, so the sanitizer suite needs no list of which tests
// start MPI (a list by test name once missed one). ASAN_OPTIONS=detect_leaks=1 still overrides.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPBENCH_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define OPBENCH_ASAN 1
#endif

#ifdef OPBENCH_ASAN
extern "C" const char* __asan_default_options() {
  return "detect_leaks=0";
}
#endif

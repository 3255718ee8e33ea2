// The declaration in include/CLibFuzzer.h is defined by libFuzzer itself (linked by -sanitize=fuzzer).

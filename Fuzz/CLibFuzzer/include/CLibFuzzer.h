#ifndef C_LIB_FUZZER_H
#define C_LIB_FUZZER_H
#include <stddef.h>
#include <stdint.h>

// libFuzzer's entry for programs that keep their own main (compiler-rt, FuzzerInterface.h): runs the
// fuzzing loop over `callback` with the command line's libFuzzer flags.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif

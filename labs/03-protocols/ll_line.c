/* labs/03-protocols/ll_line.c - lab 3: NCCL's LL and LL128 lines, by hand. YOUR FILE.
 *
 * Read labs/03-protocols/README.md ("Background") first. ll_line.h (do not edit it) says what each
 * function must do; `cclab lab check 03` tests them against cclab's own protocol code with a fuzzer.
 * This skeleton compiles and runs, but every function is wrong: do the TODOs in order.
 */
#include "ll_line.h"

#include <string.h>

/* TODO 1: the flag of step `step`. A receive buffer starts zeroed: which flag must step 0 NOT use?
 * NCCL uses step + 1, kept to 32 bits. */
uint32_t lab_ll_flag(uint64_t step) { return (uint32_t)step; }

/* TODO 2: the line for 8 payload bytes. Each 8-byte half v[i] is {4 payload bytes in its low 32 bits,
 * the flag in its high 32 bits}; the payload's low 4 bytes go in the first half. (Write each half as
 * one 64-bit value: that is the single 8-byte store a GPU makes.) */
void lab_ll_pack(uint64_t data, uint32_t flag, lab_ll_line* line) {
  (void)flag;
  line->v[0] = data; /* wrong: no flag, and the high payload bytes are in the flag's place */
  line->v[1] = 0;
}

/* TODO 3: the receiver. Ready only when BOTH halves carry `flag`: a line whose halves come from two
 * different steps is torn, and its data must never be returned. Read each half into a local uint64_t
 * once, and take the flag and the data from that same word. Not ready: return 0, leave *data alone. */
int lab_ll_unpack(const lab_ll_line* line, uint32_t flag, uint64_t* data) {
  (void)flag;
  *data = line->v[0]; /* wrong: no flag check at all */
  return 1;
}

/* TODO 4: a whole buffer: 8 payload bytes per line (lab_ll_pack), the last line zero-padded when
 * `bytes` is not a multiple of 8. Return the number of lines. */
size_t lab_ll_pack_buffer(const void* src, size_t bytes, uint32_t flag, lab_ll_line* dst) {
  (void)src;
  (void)bytes;
  (void)flag;
  (void)dst;
  return 0;
}

/* TODO 5: the LL128 line: 15 payload words, the flag in the last word. */
void lab_ll128_pack(const uint64_t data[15], uint64_t flag, lab_ll128_line* line) {
  (void)flag;
  memcpy(line->v, data, 15 * sizeof(uint64_t));
  line->v[15] = 0;
}

/* TODO 6: ready only when the flag word is `flag`; then copy the 15 payload words. Not ready: return 0
 * and leave data alone. */
int lab_ll128_unpack(const lab_ll128_line* line, uint64_t flag, uint64_t data[15]) {
  (void)flag;
  memcpy(data, line->v, 15 * sizeof(uint64_t));
  return 1;
}

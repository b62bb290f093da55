/* labs/solutions/03-protocols/ll_line.c - lab 3's reference solution: NCCL's LL and LL128 lines. */
#include "ll_line.h"

#include <string.h>

/* TODO 1: step s's flag is s + 1 (32 bits), so that a zeroed buffer never looks like step 0's data. */
uint32_t lab_ll_flag(uint64_t step) { return (uint32_t)(step + 1); }

/* TODO 2: each 8-byte half is {4 payload bytes, the flag}: data in the low word, flag in the high. */
void lab_ll_pack(uint64_t data, uint32_t flag, lab_ll_line* line) {
  line->v[0] = (uint64_t)(uint32_t)data | ((uint64_t)flag << 32);
  line->v[1] = (data >> 32) | ((uint64_t)flag << 32);
}

/* TODO 3: read each half once, check its flag in the word just read, and take the data from the same
 * word: both halves must carry the flag, or the line is not ready (torn, or still the last step's). */
int lab_ll_unpack(const lab_ll_line* line, uint32_t flag, uint64_t* data) {
  const uint64_t lo = line->v[0];
  if ((uint32_t)(lo >> 32) != flag) return 0;
  const uint64_t hi = line->v[1];
  if ((uint32_t)(hi >> 32) != flag) return 0;
  *data = (lo & 0xffffffffu) | (hi << 32);
  return 1;
}

/* TODO 4: 8 payload bytes a line; the last line carries the remaining bytes, zero beyond them. */
size_t lab_ll_pack_buffer(const void* src, size_t bytes, uint32_t flag, lab_ll_line* dst) {
  const unsigned char* s = (const unsigned char*)src;
  const size_t lines = (bytes + 7) / 8;
  for (size_t i = 0; i < lines; ++i) {
    const size_t n = bytes - 8 * i < 8 ? bytes - 8 * i : 8;
    uint64_t w = 0;
    for (size_t b = 0; b < n; ++b) w |= (uint64_t)s[8 * i + b] << (8 * b);
    lab_ll_pack(w, flag, &dst[i]);
  }
  return lines;
}

/* TODO 5: 15 payload words, then the flag word last. */
void lab_ll128_pack(const uint64_t data[15], uint64_t flag, lab_ll128_line* line) {
  memcpy(line->v, data, 15 * sizeof(uint64_t));
  line->v[15] = flag;
}

/* TODO 6: the flag word decides; the payload is read only after it matched. */
int lab_ll128_unpack(const lab_ll128_line* line, uint64_t flag, uint64_t data[15]) {
  if (line->v[15] != flag) return 0;
  memcpy(data, line->v, 15 * sizeof(uint64_t));
  return 1;
}

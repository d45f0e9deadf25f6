/* IEEE binary16 and bfloat16 <-> binary32 conversions, round to nearest even,
 * bit-compatible with ggml's scalar conversions. */
#ifndef TPORT_CORE_FP16_H
#define TPORT_CORE_FP16_H

#include <stdint.h>

float tport_fp16_to_fp32(uint16_t h);
uint16_t tport_fp32_to_fp16(float f);
float tport_bf16_to_fp32(uint16_t h);
uint16_t tport_fp32_to_bf16(float f);

#endif

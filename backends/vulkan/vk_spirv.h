/* The embedded SPIR-V modules (generated vk_spirv_data.c). */
#ifndef TPORT_VK_SPIRV_H
#define TPORT_VK_SPIRV_H
#include <stddef.h>

typedef struct vk_spirv_module {
    const char *name;           /* e.g. "mmv_q4_0_16" */
    const unsigned char *bytes; /* SPIR-V words, byte order of the build host */
    size_t size;
} vk_spirv_module;

extern const vk_spirv_module vk_spirv_modules[];
extern const int vk_spirv_count;
#endif

/* Mesa's lavapipe and the Vulkan loader of Debian 12 leak a few small
 * allocations per instance and per pipeline (a bare vkCreateInstance +
 * vkDestroyInstance program shows it under LeakSanitizer).  In sanitizer
 * builds the calls that make them run with leak detection off, so that
 * every other leak in the process is still reported. */
#ifndef TPORT_VK_LSAN_H
#define TPORT_VK_LSAN_H

#if defined(__SANITIZE_ADDRESS__)
#define VK_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VK_HAVE_LSAN 1
#endif
#endif

#ifdef VK_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#define VK_LSAN_OFF() __lsan_disable()
#define VK_LSAN_ON() __lsan_enable()
#else
#define VK_LSAN_OFF() ((void)0)
#define VK_LSAN_ON() ((void)0)
#endif

#endif

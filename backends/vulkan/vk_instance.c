/* Instance and devices: every physical device is listed (discrete GPUs
 * first, software rasterisers last); each gets a logical device with one
 * compute queue, a timeline semaphore for tickets and, where present, 16-
 * and 8-bit storage.  A device that cannot run us stays listed with why. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"
#include "vk_lsan.h"

tport_status vk_status(VkResult r, const char *what) {
    switch (r) {
    case VK_SUCCESS:
        return TPORT_STATUS_OK;
    case VK_ERROR_DEVICE_LOST:
        return vk_host->error(TPORT_STATUS_DEVICE_LOST, "vulkan: %s: device lost", what);
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
        return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: %s: out of %s memory", what,
                              r == VK_ERROR_OUT_OF_HOST_MEMORY ? "host" : "device");
    case VK_TIMEOUT:
        return vk_host->error(TPORT_STATUS_TIMEOUT, "vulkan: %s: timed out", what);
    default:
        return vk_host->error(TPORT_STATUS_ERROR, "vulkan: %s failed (VkResult %d)", what, (int)r);
    }
}

/* Environment variables are ignored in set-uid processes, as everywhere
 * in tensorport. */
const char *vk_env(const char *name) {
    return secure_getenv(name);
}

/* Bytes from an environment variable ("65536", "64k", "128m"), 0 if unset. */
static uint64_t env_bytes(const char *name) {
    const char *s = vk_env(name);
    if (!s || !*s)
        return 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end && (*end == 'k' || *end == 'K'))
        v <<= 10;
    else if (end && (*end == 'm' || *end == 'M'))
        v <<= 20;
    return v;
}

bool vk_env_on(const char *name) {
    const char *s = vk_env(name);
    return s && *s && strcmp(s, "0") != 0;
}

static int type_rank(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return 4;
    default:
        return 3;
    }
}

static int pick_memory(const VkPhysicalDeviceMemoryProperties *mp, VkMemoryPropertyFlags want) {
    int best = -1;
    VkDeviceSize best_heap = 0;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        if ((mp->memoryTypes[i].propertyFlags & want) != want)
            continue;
        VkDeviceSize h = mp->memoryHeaps[mp->memoryTypes[i].heapIndex].size;
        if (best < 0 || h > best_heap) {
            best = (int)i;
            best_heap = h;
        }
    }
    return best;
}

static void probe(vk_dev *d) {
    vkGetPhysicalDeviceProperties(d->phys, &d->props);
    vkGetPhysicalDeviceMemoryProperties(d->phys, &d->memprops);
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &drv};
    if (d->props.apiVersion >= VK_API_VERSION_1_2)
        vkGetPhysicalDeviceProperties2(d->phys, &p2);
    drv.driverName[31] = drv.driverInfo[31] = '\0'; /* fits d->driver */
    snprintf(d->driver, sizeof d->driver, "%.31s%s%.31s", drv.driverName, drv.driverInfo[0] ? " " : "",
             drv.driverInfo);
    if (!d->driver[0])
        snprintf(d->driver, sizeof d->driver, "driver %u", d->props.driverVersion);
}

static tport_status make_device(vk_dev *d) {
    if (d->props.apiVersion < VK_API_VERSION_1_2) {
        snprintf(d->why_not, sizeof d->why_not, "Vulkan %u.%u < 1.2 (timeline semaphores needed)",
                 VK_API_VERSION_MAJOR(d->props.apiVersion), VK_API_VERSION_MINOR(d->props.apiVersion));
        return TPORT_STATUS_UNSUPPORTED;
    }
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    vkGetPhysicalDeviceFeatures2(d->phys, &f2);
    if (!f12.timelineSemaphore) {
        snprintf(d->why_not, sizeof d->why_not, "no timeline semaphores");
        return TPORT_STATUS_UNSUPPORTED;
    }
    d->has16 = f11.storageBuffer16BitAccess;
    d->has8 = f12.storageBuffer8BitAccess;
    d->has_f16 = f12.shaderFloat16;
    d->has_f64 = f2.features.shaderFloat64 && !vk_env_on("TPORT_VULKAN_NO_F64");
    d->use16 = d->has16 && d->has8 && !vk_env_on("TPORT_VULKAN_FORCE_32BIT");

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    if (nq > 16)
        nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, qf);
    int fam = -1;
    for (uint32_t i = 0; i < nq && fam < 0; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            fam = (int)i;
    int mdev = pick_memory(&d->memprops, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    int mhost = pick_memory(&d->memprops, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (fam < 0 || mdev < 0 || mhost < 0) {
        snprintf(d->why_not, sizeof d->why_not, "no %s", fam < 0 ? "compute queue" : "usable memory type");
        return TPORT_STATUS_UNSUPPORTED;
    }
    d->queue_family = (uint32_t)fam;
    d->mt_device = (uint32_t)mdev;
    d->mt_host = (uint32_t)mhost;
    d->memory_total = d->memprops.memoryHeaps[d->memprops.memoryTypes[mdev].heapIndex].size;

    VkPhysicalDeviceVulkan12Features e12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .timelineSemaphore = VK_TRUE,
                                            .storageBuffer8BitAccess = d->use16};
    VkPhysicalDeviceVulkan11Features e11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &e12, .storageBuffer16BitAccess = d->use16};
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = d->queue_family, .queueCount = 1, .pQueuePriorities = &prio};
    VkPhysicalDeviceFeatures2 e2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &e11,
                                    .features = {.shaderFloat64 = d->has_f64}};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &e2,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi};
    VK_LSAN_OFF();
    VkResult r = vkCreateDevice(d->phys, &di, NULL, &d->dev);
    VK_LSAN_ON();
    if (r != VK_SUCCESS) {
        snprintf(d->why_not, sizeof d->why_not, "vkCreateDevice failed (VkResult %d)", (int)r);
        d->dev = VK_NULL_HANDLE;
        return TPORT_STATUS_ERROR;
    }
    vkGetDeviceQueue(d->dev, d->queue_family, 0, &d->queue);
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = d->queue_family};
    VkSemaphoreTypeCreateInfo ti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                    .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE, .initialValue = 0};
    VkSemaphoreCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti};
    if (vkCreateCommandPool(d->dev, &pi, NULL, &d->cmd_pool) != VK_SUCCESS ||
        vkCreateSemaphore(d->dev, &si, NULL, &d->timeline) != VK_SUCCESS) {
        snprintf(d->why_not, sizeof d->why_not, "command pool or semaphore creation failed");
        return TPORT_STATUS_ERROR;
    }

    d->align = d->props.limits.minStorageBufferOffsetAlignment;
    if (d->align < 16)
        d->align = 16;
    d->max_range = d->props.limits.maxStorageBufferRange;
    d->max_alloc = 1ull << 31; /* maxMemoryAllocationSize: Vulkan 1.1 core */
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(d->phys, &p2);
    if (m3.maxMemoryAllocationSize)
        d->max_alloc = m3.maxMemoryAllocationSize;
    if (d->max_alloc > d->memory_total && d->memory_total)
        d->max_alloc = d->memory_total;
    /* TPORT_VULKAN_MAX_BUFFER forces a smaller binding range (tests: weights
     * larger than one range are bound in chunks of rows) */
    uint64_t forced = env_bytes("TPORT_VULKAN_MAX_BUFFER");
    if (forced >= 1024 && forced < d->max_range)
        d->max_range = forced & ~(uint64_t)(d->align - 1);

    tport_status st = vk_pipelines_init(d);
    if (st != TPORT_STATUS_OK) {
        snprintf(d->why_not, sizeof d->why_not, "pipeline layout creation failed");
        return st;
    }
    st = vk_buf_make(d, 4u << 20, true, &d->staging);
    if (st != TPORT_STATUS_OK) {
        snprintf(d->why_not, sizeof d->why_not, "no staging memory");
        return st;
    }
    d->ready = true;
    return TPORT_STATUS_OK;
}

static void free_device(vk_dev *d) {
    if (!d->dev)
        return;
    vkDeviceWaitIdle(d->dev);
    vk_reap(d, true);
    for (int i = 0; i < VK_GRAPH_CACHE; i++)
        if (d->graphs[i].graph_key)
            vk_graph_forget(d, d->graphs[i].graph_key);
    if (d->staging)
        vk_buf_destroy(d->staging);
    vk_pipelines_free(d);
    if (d->timeline)
        vkDestroySemaphore(d->dev, d->timeline, NULL);
    if (d->cmd_pool)
        vkDestroyCommandPool(d->dev, d->cmd_pool, NULL);
    vkDestroyDevice(d->dev, NULL);
    d->dev = VK_NULL_HANDLE;
}

static int cmp_dev(const void *pa, const void *pb) {
    const vk_dev *a = pa, *b = pb;
    return type_rank(a->props.deviceType) - type_rank(b->props.deviceType);
}

/* A GPU's Vulkan driver on Linux works through a device node: a DRM render
 * node, or NVIDIA's own.  Without one, the only devices the loader can find
 * are software rasterisers (lavapipe), which are for testing, never for
 * speed, and whose driver (LLVM) costs some 60 MB of memory and tens of
 * milliseconds at every start of every program.  So without a GPU node the
 * plug-in creates no instance unless TPORT_VULKAN_SOFTWARE=1 (or
 * TPORT_VULKAN_DEVICE) asks for them. */
static bool gpu_node_present(void) {
    static const char *const patterns[] = {"/dev/dri/renderD*", "/dev/nvidia[0-9]*"};
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        glob_t g;
        int r = glob(patterns[i], GLOB_NOSORT, NULL, &g);
        size_t n = r == 0 ? g.gl_pathc : 0;
        if (r == 0 || r == GLOB_NOMATCH)
            globfree(&g);
        if (n)
            return true;
    }
    return false;
}

tport_status vk_instance_open(vk_backend *be) {
    if (!gpu_node_present() && !vk_env_on("TPORT_VULKAN_SOFTWARE") && !vk_env("TPORT_VULKAN_DEVICE")) {
        vk_host->log(TPORT_LOG_INFO, "vulkan: no GPU device node (/dev/dri/renderD*, /dev/nvidia*): not looking for "
                                     "software rasterisers (TPORT_VULKAN_SOFTWARE=1 uses them)");
        return TPORT_STATUS_OK; /* no devices */
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "tensorport",
                             .pEngineName = "tport-vulkan", .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VK_LSAN_OFF();
    VkResult r = vkCreateInstance(&ii, NULL, &be->instance);
    VK_LSAN_ON();
    if (r != VK_SUCCESS) {
        be->instance = VK_NULL_HANDLE;
        /* no driver at all: the plug-in simply has no devices */
        return r == VK_ERROR_INCOMPATIBLE_DRIVER ? TPORT_STATUS_OK : vk_status(r, "vkCreateInstance");
    }
    uint32_t n = 0;
    VK_LSAN_OFF();
    vkEnumeratePhysicalDevices(be->instance, &n, NULL);
    VkPhysicalDevice phys[VK_MAX_DEVICES];
    if (n > VK_MAX_DEVICES)
        n = VK_MAX_DEVICES;
    if (n)
        vkEnumeratePhysicalDevices(be->instance, &n, phys);
    VK_LSAN_ON();
    const char *pick = vk_env("TPORT_VULKAN_DEVICE");
    if (pick && *pick) {
        char *end = NULL;
        long want = strtol(pick, &end, 10);
        if (!end || *end || want < 0 || want >= (long)n) {
            vk_host->log(TPORT_LOG_WARN, "vulkan: TPORT_VULKAN_DEVICE=%s: no such device (%u found)", pick, n);
            n = 0;
        } else {
            phys[0] = phys[want];
            n = 1;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        be->devs[i].phys = phys[i];
        probe(&be->devs[i]);
    }
    be->n_dev = (int)n;
    qsort(be->devs, n, sizeof be->devs[0], cmp_dev);
    for (int i = 0; i < be->n_dev; i++)
        if (make_device(&be->devs[i]) != TPORT_STATUS_OK)
            vk_host->log(TPORT_LOG_INFO, "vulkan: %s: not usable: %s", be->devs[i].props.deviceName,
                         be->devs[i].why_not);
    /* only usable devices are numbered */
    int k = 0;
    for (int i = 0; i < be->n_dev; i++) {
        if (!be->devs[i].ready) {
            free_device(&be->devs[i]);
            continue;
        }
        if (k != i)
            be->devs[k] = be->devs[i];
        k++;
    }
    be->n_dev = k;
    return TPORT_STATUS_OK;
}

void vk_instance_close(vk_backend *be) {
    for (int i = 0; i < be->n_dev; i++)
        free_device(&be->devs[i]);
    if (be->instance) {
        VK_LSAN_OFF();
        vkDestroyInstance(be->instance, NULL);
        VK_LSAN_ON();
    }
    be->instance = VK_NULL_HANDLE;
    be->n_dev = 0;
}

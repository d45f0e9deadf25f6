/* Internal state of the Vulkan plug-in.  The plug-in includes nothing of
 * tensorport but tport/backend.h (and the Vulkan loader's header). */
#ifndef TPORT_VK_INTERNAL_H
#define TPORT_VK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "tport/backend.h"

#define VK_BACKEND_VERSION "0.1.0"
#define VK_PARAM_WORDS 80u  /* parameter words per dispatch (see shaders/common.glsl) */
#define VK_MAX_DEVICES 8
#define VK_GRAPH_CACHE 16   /* recorded graphs kept per device */
#define VK_RING_SLOTS 64    /* the staging buffer as a ring of slots for small uploads */

extern const tport_host_api *vk_host;

/* The shader programs; each has a "_32" and a "_16" SPIR-V module. */
enum {
    VK_SH_ELEMENTWISE,
    VK_SH_ROWNORM,
    VK_SH_ROPE,
    VK_SH_CONCAT,
    VK_SH_QUANT_ACT,
    VK_SH_GET_ROWS, /* + type slot (VK_TY_*) */
    VK_SH_MMV = VK_SH_GET_ROWS + 6,
    VK_SH_MMT = VK_SH_MMV + 6,
    VK_SH_COUNT = VK_SH_MMT + 6,
};
/* weight types the get_rows / mul_mat shaders dequantize */
enum { VK_TY_F32, VK_TY_F16, VK_TY_Q8_0, VK_TY_Q4_0, VK_TY_Q4_K, VK_TY_Q6_K, VK_TY_COUNT };

typedef struct vk_dev vk_dev;

/* One tport_buffer: a VkBuffer bound to its own allocation. */
typedef struct vk_buf {
    vk_dev *dev;
    VkBuffer buf;
    VkDeviceMemory mem;
    uint64_t size;
    void *map; /* host address when host-visible and mapped, else NULL */
    bool host_kind; /* allocated as TPORT_MEM_HOST_STAGING */
} vk_buf;

/* A recorded graph: its command buffer replays while graph and bind keys
 * stay the same. */
typedef struct vk_graph {
    uint64_t graph_key, bind_key;
    VkCommandBuffer cmd;
    VkDescriptorPool pool;
    vk_buf *params; /* parameter words of every dispatch */
    vk_buf *scratch; /* rounded activations of quantized products */
    uint64_t last_ticket; /* the submission that last used it */
    uint64_t last_use;
    int n_dispatch;
} vk_graph;

struct vk_dev {
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memprops;
    char driver[64];
    VkDevice dev;
    VkQueue queue;
    uint32_t queue_family;
    bool ready; /* logical device made */
    char why_not[160]; /* when not ready */
    bool lost;
    bool use16;         /* 16/8-bit storage variants of the shaders */
    bool has16, has8, has_f16, has_f64;
    uint64_t max_range; /* binding range (maxStorageBufferRange or forced) */
    uint64_t max_alloc; /* largest buffer */
    uint64_t align;     /* minStorageBufferOffsetAlignment */
    uint64_t memory_total;
    uint32_t mt_device, mt_host;
    VkCommandPool cmd_pool;
    VkSemaphore timeline;
    uint64_t submitted; /* last value signalled (a ticket) */
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipes[VK_SH_COUNT];
    vk_buf *staging; /* host-visible transfer buffer */
    uint64_t ring_ticket[VK_RING_SLOTS]; /* last copy out of each staging slot */
    uint32_t ring_head;
    VkCommandBuffer pending[64]; /* one-shot work submitted without waiting */
    uint64_t pending_ticket[64];
    int n_pending;
    vk_graph graphs[VK_GRAPH_CACHE];
    uint64_t use_clock;
};

typedef struct vk_backend {
    VkInstance instance;
    int n_dev;
    vk_dev devs[VK_MAX_DEVICES];
    /* buffer handles: index + 1 in the low 32 bits, a generation above */
    vk_buf **bufs;
    uint32_t *gens;
    uint32_t n_bufs;
} vk_backend;

/* vk_instance.c */
tport_status vk_instance_open(vk_backend *be);
void vk_instance_close(vk_backend *be);
tport_status vk_status(VkResult r, const char *what);
const char *vk_env(const char *name); /* NULL in set-uid processes */
bool vk_env_on(const char *name);      /* set, not empty, not "0" */

/* vk_memory.c */
tport_status vk_buf_make(vk_dev *d, uint64_t size, bool host_visible, vk_buf **out);
void vk_buf_destroy(vk_buf *b);
tport_status vk_submit(vk_dev *d, VkCommandBuffer cmd, uint64_t *ticket);
tport_status vk_wait(vk_dev *d, uint64_t ticket, uint64_t timeout_ns);
tport_status vk_one_shot_begin(vk_dev *d, VkCommandBuffer *cmd);
tport_status vk_one_shot_end(vk_dev *d, VkCommandBuffer cmd, bool wait, uint64_t *ticket);
void vk_cmd_barrier(VkCommandBuffer cmd);
void vk_reap(vk_dev *d, bool all);
tport_status vk_upload(vk_dev *d, vk_buf *dst, uint64_t off, const void *src, uint64_t size);
tport_status vk_upload_async(vk_dev *d, vk_buf *dst, uint64_t off, const void *src, uint64_t size,
                             uint64_t *ticket);
tport_status vk_download(vk_dev *d, vk_buf *src, uint64_t off, void *dst, uint64_t size);
vk_buf *vk_handle_get(vk_backend *be, tport_buffer h);
tport_buffer vk_handle_add(vk_backend *be, vk_buf *b);
void vk_handle_drop(vk_backend *be, tport_buffer h);

/* vk_pipeline.c */
tport_status vk_pipelines_init(vk_dev *d);
tport_status vk_pipeline_get(vk_dev *d, int shader, VkPipeline *out);
void vk_pipelines_free(vk_dev *d);
int vk_weight_slot(tport_type_id type); /* VK_TY_* or -1 */

/* vk_supports.c */
bool vk_supports(vk_dev *d, const tport_graph_view *g, int32_t node);
uint64_t vk_span(const tport_tensor_view *t);
/* Q8_0 / Q8_K: how the CPU rounds the activations of a product with weights
 * of `type` (0: not rounded); the shaders round them alike. */
tport_type_id vk_act_rounding(const tport_tensor_view *w);

/* vk_graph.c */
tport_status vk_graph_compute(vk_backend *be, vk_dev *d, const tport_graph_view *g, tport_ticket *ticket);
void vk_graph_forget(vk_dev *d, uint64_t key);

#endif

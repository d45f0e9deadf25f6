/* Buffers, handles, submissions and tickets, and staged transfers.
 *
 * Every submission signals the device's timeline semaphore with the next
 * value, which is the ticket; every command buffer starts with a full
 * memory barrier, so work takes effect in submission order.  Transfers
 * between host memory and device buffers go through the device's
 * host-visible staging buffer: small uploads (inputs per token) through a
 * ring of its slots without waiting, the rest in pieces, synchronously
 * (after all earlier work, so the ring is idle then). */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

tport_status vk_buf_make(vk_dev *d, uint64_t size, bool host_visible, vk_buf **out) {
    *out = NULL;
    if (size == 0)
        size = 4;
    size = (size + 15) & ~(uint64_t)15; /* room for the last 32-bit word */
    if (size > d->max_alloc)
        return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: a buffer of %llu bytes exceeds the device's %llu",
                              (unsigned long long)size, (unsigned long long)d->max_alloc);
    vk_buf *b = calloc(1, sizeof *b);
    if (!b)
        return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
    b->dev = d;
    b->size = size;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(d->dev, &bi, NULL, &b->buf);
    if (r != VK_SUCCESS) {
        free(b);
        return vk_status(r, "vkCreateBuffer");
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->dev, b->buf, &req);
    uint32_t mt = host_visible ? d->mt_host : d->mt_device;
    if (!(req.memoryTypeBits & (1u << mt))) {
        /* fall back to any allowed type with the wanted flags */
        VkMemoryPropertyFlags want = host_visible ? (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
                                                  : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        mt = UINT32_MAX;
        for (uint32_t i = 0; i < d->memprops.memoryTypeCount && mt == UINT32_MAX; i++)
            if ((req.memoryTypeBits & (1u << i)) && (d->memprops.memoryTypes[i].propertyFlags & want) == want)
                mt = i;
        if (mt == UINT32_MAX) {
            vkDestroyBuffer(d->dev, b->buf, NULL);
            free(b);
            return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: no memory type for a buffer");
        }
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = mt};
    r = vkAllocateMemory(d->dev, &ai, NULL, &b->mem);
    if (r == VK_SUCCESS)
        r = vkBindBufferMemory(d->dev, b->buf, b->mem, 0);
    if (r == VK_SUCCESS && host_visible)
        r = vkMapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map);
    if (r != VK_SUCCESS) {
        if (b->mem)
            vkFreeMemory(d->dev, b->mem, NULL);
        vkDestroyBuffer(d->dev, b->buf, NULL);
        free(b);
        return vk_status(r, "allocating device memory");
    }
    *out = b;
    return TPORT_STATUS_OK;
}

void vk_buf_destroy(vk_buf *b) {
    if (!b)
        return;
    vk_dev *d = b->dev;
    if (b->map)
        vkUnmapMemory(d->dev, b->mem);
    vkDestroyBuffer(d->dev, b->buf, NULL);
    vkFreeMemory(d->dev, b->mem, NULL);
    free(b);
}

/* ---- handles ------------------------------------------------------------ */

tport_buffer vk_handle_add(vk_backend *be, vk_buf *b) {
    uint32_t slot = UINT32_MAX;
    for (uint32_t i = 0; i < be->n_bufs && slot == UINT32_MAX; i++)
        if (!be->bufs[i])
            slot = i;
    if (slot == UINT32_MAX) {
        uint32_t n = be->n_bufs ? be->n_bufs * 2 : 64;
        vk_buf **nb = realloc(be->bufs, n * sizeof *nb);
        if (!nb)
            return 0;
        be->bufs = nb;
        uint32_t *ng = realloc(be->gens, n * sizeof *ng);
        if (!ng)
            return 0;
        be->gens = ng;
        for (uint32_t i = be->n_bufs; i < n; i++) {
            be->bufs[i] = NULL;
            be->gens[i] = 1;
        }
        slot = be->n_bufs;
        be->n_bufs = n;
    }
    be->bufs[slot] = b;
    return ((uint64_t)be->gens[slot] << 32) | (uint64_t)(slot + 1);
}

vk_buf *vk_handle_get(vk_backend *be, tport_buffer h) {
    uint64_t slot = (h & 0xffffffffu);
    if (slot == 0 || slot > be->n_bufs)
        return NULL;
    if (be->gens[slot - 1] != (uint32_t)(h >> 32))
        return NULL;
    return be->bufs[slot - 1];
}

void vk_handle_drop(vk_backend *be, tport_buffer h) {
    uint64_t slot = (h & 0xffffffffu);
    if (slot == 0 || slot > be->n_bufs || be->gens[slot - 1] != (uint32_t)(h >> 32))
        return;
    be->bufs[slot - 1] = NULL;
    be->gens[slot - 1]++;
}

/* ---- submissions -------------------------------------------------------- */

/* TPORT_VULKAN_FAIL=lost:N: the device is "lost" at its N-th submission
 * (tests the host's recovery; a real loss comes from the driver). */
static bool injected_loss(vk_dev *d) {
    const char *f = vk_env("TPORT_VULKAN_FAIL");
    if (!f || strncmp(f, "lost:", 5))
        return false;
    return d->submitted + 1 >= strtoull(f + 5, NULL, 10);
}

tport_status vk_submit(vk_dev *d, VkCommandBuffer cmd, uint64_t *ticket) {
    if (!d->lost && injected_loss(d))
        d->lost = true;
    if (d->lost)
        return vk_host->error(TPORT_STATUS_DEVICE_LOST, "vulkan: %s was lost", d->props.deviceName);
    uint64_t value = d->submitted + 1;
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .signalSemaphoreValueCount = 1, .pSignalSemaphoreValues = &value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &ts, .commandBufferCount = 1,
                       .pCommandBuffers = &cmd, .signalSemaphoreCount = 1, .pSignalSemaphores = &d->timeline};
    VkResult r = vkQueueSubmit(d->queue, 1, &si, VK_NULL_HANDLE);
    if (r != VK_SUCCESS) {
        if (r == VK_ERROR_DEVICE_LOST)
            d->lost = true;
        return vk_status(r, "vkQueueSubmit");
    }
    d->submitted = value;
    if (ticket)
        *ticket = value;
    return TPORT_STATUS_OK;
}

tport_status vk_wait(vk_dev *d, uint64_t ticket, uint64_t timeout_ns) {
    if (d->lost)
        return vk_host->error(TPORT_STATUS_DEVICE_LOST, "vulkan: %s was lost", d->props.deviceName);
    if (ticket == 0)
        return TPORT_STATUS_OK;
    if (ticket > d->submitted)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: ticket %llu was never issued",
                              (unsigned long long)ticket);
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, .semaphoreCount = 1,
                              .pSemaphores = &d->timeline, .pValues = &ticket};
    VkResult r = vkWaitSemaphores(d->dev, &wi, timeout_ns);
    if (r == VK_TIMEOUT)
        return vk_host->error(TPORT_STATUS_TIMEOUT, "vulkan: ticket %llu not done after %llu ns",
                              (unsigned long long)ticket, (unsigned long long)timeout_ns);
    if (r == VK_ERROR_DEVICE_LOST)
        d->lost = true;
    return vk_status(r, "vkWaitSemaphores");
}

/* Frees one-shot command buffers whose work is done (all: every one; the
 * device must be idle). */
void vk_reap(vk_dev *d, bool all) {
    uint64_t done = 0;
    if (!all && vkGetSemaphoreCounterValue(d->dev, d->timeline, &done) != VK_SUCCESS)
        return;
    int k = 0;
    for (int i = 0; i < d->n_pending; i++) {
        if (all || d->pending_ticket[i] <= done) {
            vkFreeCommandBuffers(d->dev, d->cmd_pool, 1, &d->pending[i]);
        } else {
            d->pending[k] = d->pending[i];
            d->pending_ticket[k++] = d->pending_ticket[i];
        }
    }
    d->n_pending = k;
}

tport_status vk_one_shot_begin(vk_dev *d, VkCommandBuffer *cmd) {
    vk_reap(d, false);
    if (d->n_pending == (int)(sizeof d->pending / sizeof d->pending[0])) {
        tport_status st = vk_wait(d, d->pending_ticket[0], UINT64_MAX);
        if (st != TPORT_STATUS_OK)
            return st;
        vk_reap(d, false);
    }
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = d->cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkResult r = vkAllocateCommandBuffers(d->dev, &ai, cmd);
    if (r != VK_SUCCESS)
        return vk_status(r, "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(*cmd, &bi);
    vk_cmd_barrier(*cmd);
    return TPORT_STATUS_OK;
}

/* Ends, submits and (wait) waits for a one-shot command buffer, which is
 * freed here when waited for, otherwise by vk_reap once its ticket is done. */
tport_status vk_one_shot_end(vk_dev *d, VkCommandBuffer cmd, bool wait, uint64_t *ticket) {
    vk_cmd_barrier(cmd);
    vkEndCommandBuffer(cmd);
    uint64_t t = 0;
    tport_status st = vk_submit(d, cmd, &t);
    if (st == TPORT_STATUS_OK && wait)
        st = vk_wait(d, t, UINT64_MAX);
    if (st == TPORT_STATUS_OK && !wait) {
        d->pending[d->n_pending] = cmd;
        d->pending_ticket[d->n_pending++] = t;
    } else if (st == TPORT_STATUS_OK || !t) {
        vkFreeCommandBuffers(d->dev, d->cmd_pool, 1, &cmd);
    }
    if (ticket)
        *ticket = t;
    return st;
}

void vk_cmd_barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_HOST_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0,
                         NULL);
}

/* ---- staged transfers --------------------------------------------------- */

static tport_status copy_region(vk_dev *d, VkBuffer dst, uint64_t doff, VkBuffer src, uint64_t soff, uint64_t n) {
    VkCommandBuffer cmd;
    tport_status st = vk_one_shot_begin(d, &cmd);
    if (st != TPORT_STATUS_OK)
        return st;
    VkBufferCopy c = {.srcOffset = soff, .dstOffset = doff, .size = n};
    vkCmdCopyBuffer(cmd, src, dst, 1, &c);
    return vk_one_shot_end(d, cmd, true, NULL);
}

tport_status vk_upload(vk_dev *d, vk_buf *dst, uint64_t off, const void *src, uint64_t size) {
    tport_status st = vk_wait(d, d->submitted, UINT64_MAX); /* the staging buffer is free */
    if (st != TPORT_STATUS_OK)
        return st;
    if (dst->map) {
        memcpy((uint8_t *)dst->map + off, src, size);
        return TPORT_STATUS_OK;
    }
    const uint8_t *p = src;
    for (uint64_t done = 0; done < size;) {
        uint64_t n = size - done < d->staging->size ? size - done : d->staging->size;
        memcpy(d->staging->map, p + done, n);
        st = copy_region(d, dst->buf, off + done, d->staging->buf, 0, n);
        if (st != TPORT_STATUS_OK)
            return st;
        done += n;
    }
    return TPORT_STATUS_OK;
}

tport_status vk_upload_async(vk_dev *d, vk_buf *dst, uint64_t off, const void *src, uint64_t size,
                             uint64_t *ticket) {
    *ticket = 0;
    uint64_t slot = d->staging->size / VK_RING_SLOTS;
    uint32_t n = (uint32_t)((size + slot - 1) / slot);
    if (dst->map || size == 0 || n > VK_RING_SLOTS / 4)
        return vk_upload(d, dst, off, src, size);
    if (d->ring_head + n > VK_RING_SLOTS)
        d->ring_head = 0;
    uint64_t busy = 0; /* the last copy still reading these slots */
    for (uint32_t i = d->ring_head; i < d->ring_head + n; i++)
        busy = d->ring_ticket[i] > busy ? d->ring_ticket[i] : busy;
    tport_status st = vk_wait(d, busy, UINT64_MAX);
    if (st != TPORT_STATUS_OK)
        return st;
    uint64_t at = (uint64_t)d->ring_head * slot;
    memcpy((uint8_t *)d->staging->map + at, src, size);
    VkCommandBuffer cmd;
    st = vk_one_shot_begin(d, &cmd);
    if (st != TPORT_STATUS_OK)
        return st;
    VkBufferCopy c = {.srcOffset = at, .dstOffset = off, .size = size};
    vkCmdCopyBuffer(cmd, d->staging->buf, dst->buf, 1, &c);
    uint64_t t = 0;
    st = vk_one_shot_end(d, cmd, false, &t);
    if (st != TPORT_STATUS_OK)
        return st;
    for (uint32_t i = d->ring_head; i < d->ring_head + n; i++)
        d->ring_ticket[i] = t;
    d->ring_head += n;
    *ticket = t;
    return TPORT_STATUS_OK;
}

tport_status vk_download(vk_dev *d, vk_buf *src, uint64_t off, void *dst, uint64_t size) {
    tport_status st = vk_wait(d, d->submitted, UINT64_MAX);
    if (st != TPORT_STATUS_OK)
        return st;
    if (src->map) {
        memcpy(dst, (const uint8_t *)src->map + off, size);
        return TPORT_STATUS_OK;
    }
    uint8_t *p = dst;
    for (uint64_t done = 0; done < size;) {
        uint64_t n = size - done < d->staging->size ? size - done : d->staging->size;
        st = copy_region(d, d->staging->buf, 0, src->buf, off + done, n);
        if (st != TPORT_STATUS_OK)
            return st;
        memcpy(p + done, d->staging->map, n);
        done += n;
    }
    return TPORT_STATUS_OK;
}

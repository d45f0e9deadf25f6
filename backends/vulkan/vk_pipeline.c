/* One descriptor-set layout and pipeline layout for every shader (four
 * storage buffers, the parameter words, one push-constant word); compute
 * pipelines are built from the embedded SPIR-V on first use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"
#include "vk_spirv.h"

static const char *const ty_names[VK_TY_COUNT] = {"f32", "f16", "q8_0", "q4_0", "q4_k", "q6_k"};

int vk_weight_slot(tport_type_id type) {
    switch (type) {
    case TPORT_TYPE_F32:
        return VK_TY_F32;
    case TPORT_TYPE_F16:
        return VK_TY_F16;
    case TPORT_TYPE_Q8_0:
        return VK_TY_Q8_0;
    case TPORT_TYPE_Q4_0:
        return VK_TY_Q4_0;
    case TPORT_TYPE_Q4_K:
        return VK_TY_Q4_K;
    case TPORT_TYPE_Q6_K:
        return VK_TY_Q6_K;
    default:
        return -1;
    }
}

static void shader_name(int shader, bool use16, bool f64, char *out, size_t n) {
    const char *v = use16 ? "16" : "32";
    if (shader == VK_SH_ELEMENTWISE)
        snprintf(out, n, "elementwise_%s", v);
    else if (shader == VK_SH_ROWNORM)
        snprintf(out, n, "rownorm%s_%s", f64 ? "64" : "", v);
    else if (shader == VK_SH_ROPE)
        snprintf(out, n, "rope_%s", v);
    else if (shader == VK_SH_CONCAT)
        snprintf(out, n, "concat_%s", v);
    else if (shader == VK_SH_QUANT_ACT)
        snprintf(out, n, "quant_act_%s", v);
    else if (shader < VK_SH_MMV)
        snprintf(out, n, "get_rows_%s_%s", ty_names[shader - VK_SH_GET_ROWS], v);
    else if (shader < VK_SH_MMT)
        snprintf(out, n, "mmv_%s_%s", ty_names[shader - VK_SH_MMV], v);
    else
        snprintf(out, n, "mmt_%s_%s", ty_names[shader - VK_SH_MMT], v);
}

tport_status vk_pipelines_init(vk_dev *d) {
    VkDescriptorSetLayoutBinding b[5];
    for (uint32_t i = 0; i < 5; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = 5, .pBindings = b};
    VkResult r = vkCreateDescriptorSetLayout(d->dev, &li, NULL, &d->dsl);
    if (r != VK_SUCCESS)
        return vk_status(r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = 4};
    VkPipelineLayoutCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                     .pSetLayouts = &d->dsl, .pushConstantRangeCount = 1,
                                     .pPushConstantRanges = &pr};
    r = vkCreatePipelineLayout(d->dev, &pi, NULL, &d->layout);
    return vk_status(r, "vkCreatePipelineLayout");
}

tport_status vk_pipeline_get(vk_dev *d, int shader, VkPipeline *out) {
    if (shader < 0 || shader >= VK_SH_COUNT)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: no shader %d", shader);
    if (d->pipes[shader]) {
        *out = d->pipes[shader];
        return TPORT_STATUS_OK;
    }
    char name[48];
    shader_name(shader, d->use16, d->has_f64, name, sizeof name);
    const vk_spirv_module *m = NULL;
    for (int i = 0; i < vk_spirv_count && !m; i++)
        if (!strcmp(vk_spirv_modules[i].name, name))
            m = &vk_spirv_modules[i];
    if (!m || m->size % 4)
        return vk_host->error(TPORT_STATUS_ERROR, "vulkan: shader %s is missing from the plug-in", name);
    /* TPORT_VULKAN_FAIL=shader: injected build failure (tests the error path) */
    const char *fail = vk_env("TPORT_VULKAN_FAIL");
    if (fail && !strcmp(fail, "shader"))
        return vk_host->error(TPORT_STATUS_ERROR, "vulkan: shader %s failed to build (injected by TPORT_VULKAN_FAIL)",
                              name);
    uint32_t *words = malloc(m->size); /* pCode must be 4-byte aligned */
    if (!words)
        return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
    memcpy(words, m->bytes, m->size);
    VkShaderModuleCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = m->size,
                                   .pCode = words};
    VkShaderModule mod;
    VkResult r = vkCreateShaderModule(d->dev, &si, NULL, &mod);
    free(words);
    if (r != VK_SUCCESS)
        return vk_host->error(TPORT_STATUS_ERROR, "vulkan: shader %s failed to load (VkResult %d)", name, (int)r);
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod, .pName = "main"},
        .layout = d->layout};
    r = vkCreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &ci, NULL, &d->pipes[shader]);
    vkDestroyShaderModule(d->dev, mod, NULL);
    if (r != VK_SUCCESS) {
        d->pipes[shader] = VK_NULL_HANDLE;
        if (r == VK_ERROR_DEVICE_LOST)
            d->lost = true;
        return vk_host->error(r == VK_ERROR_DEVICE_LOST ? TPORT_STATUS_DEVICE_LOST : TPORT_STATUS_ERROR,
                              "vulkan: shader %s failed to build (VkResult %d)", name, (int)r);
    }
    *out = d->pipes[shader];
    return TPORT_STATUS_OK;
}

void vk_pipelines_free(vk_dev *d) {
    for (int i = 0; i < VK_SH_COUNT; i++)
        if (d->pipes[i])
            vkDestroyPipeline(d->dev, d->pipes[i], NULL);
    if (d->layout)
        vkDestroyPipelineLayout(d->dev, d->layout, NULL);
    if (d->dsl)
        vkDestroyDescriptorSetLayout(d->dev, d->dsl, NULL);
}

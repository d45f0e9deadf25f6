/* Tensor names of older llama files (llama.cpp's GGML/GGMF/GGJT, Meta
 * checkpoints, Hugging Face) mapped to GGUF's llama scheme. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

static const struct {
    const char *from, *to;
} whole_names[] = {
    {"tok_embeddings.weight", "token_embd.weight"},
    {"norm.weight", "output_norm.weight"},
    {"output.weight", "output.weight"},
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

/* Per-layer suffixes after "layers.N." (legacy) or "model.layers.N." (HF). */
static const struct {
    const char *from, *to;
} layer_names[] = {
    {"attention.wq.weight", "attn_q.weight"},
    {"attention.wk.weight", "attn_k.weight"},
    {"attention.wv.weight", "attn_v.weight"},
    {"attention.wo.weight", "attn_output.weight"},
    {"attention_norm.weight", "attn_norm.weight"},
    {"ffn_norm.weight", "ffn_norm.weight"},
    {"feed_forward.w1.weight", "ffn_gate.weight"},
    {"feed_forward.w2.weight", "ffn_down.weight"},
    {"feed_forward.w3.weight", "ffn_up.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

bool mf_normalize_llama_name(const char *name, char *out, size_t cap) {
    for (size_t i = 0; i < sizeof whole_names / sizeof whole_names[0]; i++)
        if (!strcmp(name, whole_names[i].from)) {
            snprintf(out, cap, "%s", whole_names[i].to);
            return true;
        }
    const char *p = name;
    if (!strncmp(p, "model.", 6))
        p += 6;
    if (!strncmp(p, "layers.", 7) && p[7] >= '0' && p[7] <= '9') {
        char *end;
        unsigned long layer = strtoul(p + 7, &end, 10);
        if (*end == '.' && layer < 1000000) {
            for (size_t i = 0; i < sizeof layer_names / sizeof layer_names[0]; i++)
                if (!strcmp(end + 1, layer_names[i].from)) {
                    snprintf(out, cap, "blk.%lu.%s", layer, layer_names[i].to);
                    return true;
                }
        }
    }
    snprintf(out, cap, "%s", name);
    return false;
}

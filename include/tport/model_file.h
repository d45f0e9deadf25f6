/* One description of a model file, whatever container it came in.
 * Readers (gguf, ggml-legacy, llama2c, safetensors) fill it; the model
 * loader, `tport info` and `tport convert` read it; so can any program that
 * inspects or converts model files.  Fields marked private belong to the
 * readers: a program reads the others and changes nothing. */
#ifndef TPORT_MODEL_FILE_H
#define TPORT_MODEL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tport/tport.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef enum tport_container {
    TPORT_CONTAINER_UNKNOWN = 0,
    TPORT_CONTAINER_GGUF,
    TPORT_CONTAINER_GGML,        /* unversioned 'ggml' magic  */
    TPORT_CONTAINER_GGMF,
    TPORT_CONTAINER_GGJT,
    TPORT_CONTAINER_LLAMA2C,
    TPORT_CONTAINER_SAFETENSORS,
    TPORT_CONTAINER_PYTORCH,     /* torch.save: version 1 zip, 0 legacy stream */
    TPORT_CONTAINER_ONNX,        /* an ONNX ModelProto (weights only)       */
} tport_container;

/* A tensor as stored.  Names are normalized to GGUF's llama scheme:
 * token_embd.weight, output_norm.weight, output.weight,
 * blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,
 * ffn_up,ffn_down}.weight.  Shapes follow ggml: ne[0] innermost, so a
 * weight used as mul_mat's src0 has ne = {n_in, n_out}. */
typedef struct tport_mf_tensor {
    char *name;
    tport_type_id type;        /* exact layout revision (see backend.h) */
    int n_dims;
    int64_t ne[4];             /* unused dims are 1                      */
    uint64_t offset;           /* absolute offset of the data in its file */
    uint64_t nbytes;
    const void *data;          /* into the read-only mapping, or owned   */
    uint32_t part;             /* the file holding it: 0 the model file
                                  itself, i > 0 its part file i - 1 (split
                                  GGUF, sharded safetensors)             */
    uint32_t unknown_type;     /* a GGUF type id this build does not know
                                  (a newer ggml's): type is then
                                  TPORT_MF_TYPE_UNKNOWN and nbytes 0; the
                                  file can be shown, not run or converted.
                                  0 for every known type                 */
} tport_mf_tensor;

/* The type of a tensor whose GGUF type id this build does not know. */
#define TPORT_MF_TYPE_UNKNOWN ((tport_type_id)0xFFFFFFFFu)


/* The hyperparameters every architecture has, as the file gives them (0 =
 * not given); an architecture reads its own keys itself (arch/). */
typedef struct tport_mf_hparams {
    uint32_t n_vocab, n_ctx, n_embd, n_ff, n_layer, n_head, n_head_kv;
    uint32_t n_rot;            /* rotary dims per head (head size usually) */
    float norm_eps;            /* the norm's epsilon (RMS or LayerNorm)    */
    float rope_freq_base;      /* 10000 unless the file says otherwise     */
    float rope_freq_scale;     /* 1 unless the file says otherwise         */
    int rope_mode;             /* TPORT_ROPE_NORMAL or TPORT_ROPE_NEOX     */
    /* rope.scaling.type (llama.cpp's default: linear), .attn_factor (1)
     * and .original_context_length (0: absent) */
    int rope_scaling;          /* TPORT_MF_ROPE_SCALING_*                  */
    float rope_attn_factor;
    uint32_t rope_n_ctx_orig;
} tport_mf_hparams;

enum {
    TPORT_MF_ROPE_SCALING_LINEAR = 0,
    TPORT_MF_ROPE_SCALING_NONE,
    TPORT_MF_ROPE_SCALING_YARN,
    TPORT_MF_ROPE_SCALING_LONGROPE,
    TPORT_MF_ROPE_SCALING_OTHER, /* a name llama.cpp does not know either */
};

/* Tokenizer data carried by the file (n_tokens == 0 if none). */
typedef struct tport_vocab {
    char model[32];            /* "llama" (SentencePiece BPE), "gpt2", ... */
    int32_t n_tokens;
    char **tokens;             /* NUL-terminated; token_len[i] bytes       */
    uint32_t *token_len;
    float *scores;             /* NULL if the file has none                */
    int32_t *token_type;       /* NULL if none; 1 normal, 2 unknown, 3 control,
                                  4 user defined, 5 unused, 6 byte (ggml)  */
    int32_t bos, eos, unk, pad; /* -1 if absent                            */
    bool add_bos;
} tport_vocab;

/* A metadata key/value, kept for `tport info` and conversion.  Arrays keep
 * their element type and count; strings are NUL-terminated copies. */
typedef enum tport_kv_type {
    TPORT_KV_U8, TPORT_KV_I8, TPORT_KV_U16, TPORT_KV_I16, TPORT_KV_U32, TPORT_KV_I32,
    TPORT_KV_F32, TPORT_KV_BOOL, TPORT_KV_STRING, TPORT_KV_ARRAY, TPORT_KV_U64,
    TPORT_KV_I64, TPORT_KV_F64,
} tport_kv_type;             /* numbered as GGUF's value types */

typedef struct tport_kv {
    char *key;
    tport_kv_type type;
    tport_kv_type elem_type;   /* for arrays                              */
    uint64_t n_elems;          /* for arrays                              */
    union {
        uint64_t u;
        int64_t i;
        double f;
        bool b;
        char *s;
        void *arr;             /* n_elems values; strings as char*[]; a
                                  nested array as tport_kv[]            */
    } v;
} tport_kv;

typedef struct tport_model_file {
    char *path;
    tport_container container;
    uint32_t version;          /* container version (GGUF 1-3, GGJT 1-3, ...) */
    int32_t quant_version;     /* ggml QNT version, -1 if unknown          */
    uint32_t file_type;        /* llama ftype / general.file_type, if any  */
    char arch[32];             /* "llama" ...                              */
    tport_mf_hparams hp;
    tport_vocab vocab;
    int n_kv;
    tport_kv *kv;
    int n_tensors;
    tport_mf_tensor *tensors;
    /* private to the readers */
    void *map;
    size_t map_size;
    void *owned;
    /* added by the formats readers */
    uint64_t file_size;
    uint32_t alignment;        /* tensor data alignment (GGUF, GGJT), 0 = none */
    uint64_t data_offset;      /* where the tensor data starts (GGUF)        */
    int tensors_cap;           /* private to the readers                     */
    char notes[256];           /* what the reader changed at load, or ""     */
    bool borrowed;             /* private: map is the caller's memory        */
    bool has_fd;               /* private: fd is open on the mapped file     */
    int fd;
    bool big_endian;           /* a big-endian GGUF v3 (swapped at load)     */
    uint32_t n_parts;          /* files the model was read from (multi-part
                                  GGML/GGMF merged, split GGUF, safetensors
                                  shards); 0 = one file                   */
    bool part_only;            /* private: reading one part of a multi-part model */
    /* Split GGUF and sharded safetensors: the model's other files, each
     * open and mapped for as long as this one (zero copy: a tensor with
     * part = i + 1 points into part_files[i]).  Private to the readers;
     * see tport_model_file_part_path. */
    uint32_t n_part_files;
    struct tport_model_file **part_files;
    /* A valid container that is not a complete model (a partial export, a
     * quantize test's file): the readers keep every tensor it has and say
     * here what a complete model of mf->arch would also need, e.g. "a
     * complete 1-layer llama would also need 5 tensors: blk.0.ffn_gate.weight,
     * ...".  "" and 0 when complete.  `info`/`convert` warn, `run` refuses. */
    int n_missing;
    char missing[512];
} tport_model_file;

/* Sniffs the format from the bytes, reads and validates the file.  A model
 * spread over several files opens from any of them: a split GGUF part
 * (NAME-0000K-of-0000N.gguf) finds its siblings, a safetensors shard
 * (NAME-0000K-of-0000N.safetensors) opens through NAME.safetensors.index.json
 * beside it, and a folder opens its model.safetensors.index.json or
 * model.safetensors.  On error
 * returns TPORT_STATUS_BAD_FORMAT or TPORT_STATUS_IO and the message reads
 * "FILE: offset N: what is wrong". */
tport_status tport_model_file_open(const char *path, tport_model_file **out);
/* The same from bytes in memory (borrowed: they must outlive the model
 * file); `name` stands in for the path in messages.  No companion files
 * (config.json) are read.  For fuzzing and tests. */
tport_status tport_model_file_open_memory(const void *data, size_t size, const char *name,
                                          tport_model_file **out);
void tport_model_file_close(tport_model_file *mf);
const tport_mf_tensor *tport_model_file_find(const tport_model_file *mf, const char *name);
const char *tport_container_name(tport_container c);
/* Gives a file without a vocabulary (llama2.c checkpoints) the one in a
 * llama2.c tokenizer.bin; its token count must match hp.n_vocab. */
tport_status tport_model_file_load_llama2c_vocab(tport_model_file *mf, const char *path);
/* The path of the file holding tensors with this `part` (0: mf->path),
 * or NULL past the last part file. */
const char *tport_model_file_part_path(const tport_model_file *mf, uint32_t part);
/* The metadata entry with this key, or NULL. */
const tport_kv *tport_model_file_kv(const tport_model_file *mf, const char *key);
/* The first tensor of the file whose type this build does not know, or
 * NULL: what run and convert refuse, naming it. */
const tport_mf_tensor *tport_model_file_unknown_tensor(const tport_model_file *mf);


/* ---- what the model layer makes of a file ---------------------------------
 * Answers of the architecture table (src/model/arch/) about a file that
 * is open, for programs that inspect or convert files without loading
 * them.  Files without an architecture name (llama2.c, early GGML) are
 * llama's. */

/* The file a loaded model reads its weights from; it lives as long as m. */
const tport_model_file *tport_model_file_of(const tport_model *m);
/* The sizes a model of the file would run with, as the loader reads them
 * (architecture keys, defaults and tensor shapes). */
typedef struct tport_file_shape {
    int32_t n_vocab, n_ctx, n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim;
} tport_file_shape;
/* TPORT_STATUS_UNSUPPORTED for an architecture this build does not run. */
tport_status tport_model_file_shape(const tport_model_file *mf, tport_file_shape *out);
/* True when a file of an architecture this build runs would still be
 * refused, because a key or tensor asks for math it does not implement;
 * why (cap bytes) says which.  False when it runs, or when its
 * architecture is unsupported (tport_arch_supported says that). */
bool tport_model_file_refusal(const tport_model_file *mf, char *why, size_t cap);
/* For conversion of the ggml examples' GGML-container files: the GGUF name
 * of a tensor (from the architecture's table; false when it has none),
 * and, for GPT-NeoX's fused query_key_value whose rows these files keep
 * per head as [q,k,v], the heads and the rows per head to re-order with
 * tport_qkv_deinterleave (0 when nothing is to be re-ordered). */
bool tport_model_file_gguf_name(const tport_model_file *mf, const char *name, char *out, size_t cap,
                                int64_t *interleave_heads, int64_t *head_rows);
/* Re-orders 3 x heads x hd rows of row_bytes from per-head [q,k,v] to
 * GGUF's [Q|K|V], src to dst (which must not overlap). */
void tport_qkv_deinterleave(void *dst, const void *src, size_t heads, size_t hd, size_t row_bytes);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* TPORT_MODEL_FILE_H */

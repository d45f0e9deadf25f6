/* Helpers shared by the model-file readers (private to src/formats/):
 * a bounded cursor over the mapped bytes, allocations owned by the model
 * file, checked arithmetic, and building the tensor list. */
#ifndef TPORT_FORMATS_MF_INTERNAL_H
#define TPORT_FORMATS_MF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "formats/model_file.h"

/* ---- checked arithmetic (false on overflow) ---------------------------- */
static inline bool mf_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a > UINT64_MAX - b)
        return false;
    *out = a + b;
    return true;
}
static inline bool mf_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

/* ---- bounded cursor ------------------------------------------------------ */
typedef struct mf_cursor {
    const uint8_t *data;
    uint64_t size;
    uint64_t pos;
    const char *path;
    bool swap;          /* multi-byte reads are byte-swapped (big-endian GGUF) */
} mf_cursor;

/* Records "PATH: offset AT: message" as TPORT_STATUS_BAD_FORMAT. */
tport_status mf_fail(const mf_cursor *c, uint64_t at, const char *fmt, ...) TPORT_PRINTF(3, 4);

static inline uint64_t mf_left(const mf_cursor *c) { return c->size - c->pos; }

/* Each read checks that the bytes exist; `what` names the field in the error. */
tport_status mf_need(const mf_cursor *c, uint64_t n, const char *what);
tport_status mf_skip(mf_cursor *c, uint64_t n, const char *what);
tport_status mf_read_u8(mf_cursor *c, uint8_t *v, const char *what);
tport_status mf_read_u16(mf_cursor *c, uint16_t *v, const char *what);
tport_status mf_read_u32(mf_cursor *c, uint32_t *v, const char *what);
tport_status mf_read_i32(mf_cursor *c, int32_t *v, const char *what);
tport_status mf_read_u64(mf_cursor *c, uint64_t *v, const char *what);
tport_status mf_read_f32(mf_cursor *c, float *v, const char *what);
/* Returns a pointer into the mapping and advances. */
tport_status mf_read_bytes(mf_cursor *c, uint64_t n, const uint8_t **p, const char *what);
/* Moves pos up to the next multiple of `align` (a power of two, from the
 * start of the file). */
tport_status mf_align(mf_cursor *c, uint64_t align, const char *what);

uint32_t mf_le32(const uint8_t *p);
uint64_t mf_le64(const uint8_t *p);
/* Reverses the bytes of each of n elements of `size` (2, 4 or 8) bytes. */
void mf_bswap_elems(void *p, uint64_t n, size_t size);

#define MF_TRY(expr)                              \
    do {                                          \
        tport_status mf_try_s_ = (expr);          \
        if (mf_try_s_ != TPORT_STATUS_OK)         \
            return mf_try_s_;                     \
    } while (0)

/* ---- memory owned by the model file (freed by tport_model_file_close) --- */
/* A list of zeroed blocks hung off *head, freed together. */
void *mf_owned_alloc(void **head, size_t size);
void mf_owned_free(void **head);
void *mf_alloc(tport_model_file *mf, size_t size);           /* zeroed */
void *mf_alloc_array(tport_model_file *mf, uint64_t n, size_t elem);
char *mf_strndup(tport_model_file *mf, const void *s, size_t n);
void mf_free_owned(tport_model_file *mf);

/* ---- tensors --------------------------------------------------------------- */
/* Block size and bytes per block of a type id; false if unknown. */
bool mf_type_size(tport_type_id type, int64_t *block, uint64_t *block_bytes);
/* Bytes of a tensor; BAD_FORMAT (at offset `at`) on a bad shape. */
tport_status mf_tensor_bytes(const mf_cursor *c, uint64_t at, tport_type_id type, int n_dims,
                             const int64_t *ne, uint64_t *nbytes);
/* A safetensors U8 tensor (I8's geometry) before the Hugging Face
 * mapping: only MXFP4 blocks and scales may be U8 (hf_arch.c joins them
 * into TPORT_TYPE_MXFP4); mf_apply_hf_config refuses any left over.  Never
 * seen outside the readers. */
#define MF_TYPE_U8 ((tport_type_id)0xFFFFFFFEu)
/* gpt-oss's MXFP4 experts as Hugging Face stores them, `*_blocks` U8
 * [n_expert, rows, K/32, 16] and `*_scales` U8 [n_expert, rows, K/32]
 * (ggml ne order in the tensors), repacked into ggml's MXFP4 blocks in
 * owned memory (hf_mxfp4.c).  *out gets the name `name`, ne [K, rows,
 * n_expert]; with `interleaved` (gate_up: gate and up rows alternate)
 * *out gets the even rows and *up the odd ones, named with "gate" made
 * "up".  Shapes are checked against each other and n_expert (0: any). */
tport_status mf_hf_mxfp4_join(tport_model_file *mf, const mf_cursor *c, const tport_mf_tensor *blocks,
                              const tport_mf_tensor *scales, const char *name, bool interleaved,
                              uint32_t n_expert, tport_mf_tensor *out, tport_mf_tensor *up);
/* Reserves room for n more tensors (n already capped by the caller). */
tport_status mf_reserve_tensors(tport_model_file *mf, uint64_t n);
/* Appends a tensor whose data lies in the mapping at `offset`; checks the
 * data lies inside the file.  `name` is copied. */
/* A GGUF tensor of a type id this build does not know: listed with its
 * raw id (unknown_type), its data offset checked against the file, its
 * size left 0. */
tport_status mf_add_unknown_tensor(tport_model_file *mf, const mf_cursor *c, uint64_t at, const char *name,
                                   size_t name_len, uint32_t raw_type, int n_dims, const int64_t *ne,
                                   uint64_t offset);
tport_status mf_add_tensor(tport_model_file *mf, const mf_cursor *c, uint64_t at, const char *name,
                           size_t name_len, tport_type_id type, int n_dims, const int64_t *ne,
                           uint64_t offset);
/* Appends a tensor whose data is owned (already allocated with mf_alloc). */
tport_status mf_add_owned_tensor(tport_model_file *mf, const char *name, tport_type_id type,
                                 int n_dims, const int64_t *ne, void *data, uint64_t nbytes);
/* The QK_K = 64 revision of a k-quant type (Q2_K..Q6_K); false for others. */
bool mf_qk64_type(tport_type_id type, tport_type_id *qk64);

/* The header of a pre-GGUF tensor record (n_dims, name length, type code,
 * dims, name), every field checked: 1..4 positive dims, a name of 1..255
 * bytes without NUL inside the file.  `ne` gets 1 for unused dims; `name`
 * points into the mapping (not terminated).  The record starts at *at. */
typedef struct mf_legacy_record {
    uint64_t at;
    int32_t n_dims, name_len;
    uint32_t code;
    int64_t ne[4];
    const uint8_t *name;
} mf_legacy_record;
tport_status mf_read_legacy_record(mf_cursor *c, mf_legacy_record *r);
/* Fills mf->missing / n_missing from the names a complete `label`
 * (e.g. "1-layer llama") has: `globals` (NULL-terminated) and, for each of
 * n_layer layers, `per_layer` (printf patterns with one %d). */
tport_status mf_list_missing(tport_model_file *mf, const char *label, const char *const *globals,
                             const char *const *per_layer, uint32_t n_layer);
/* Rejects two tensors with the same name. */
tport_status mf_check_unique_names(const tport_model_file *mf, const mf_cursor *c);

/* ---- names --------------------------------------------------------------- */
/* Old llama.cpp / llama2.c / Hugging Face tensor names to GGUF's llama
 * scheme; writes into out (cap bytes).  Returns false if not recognised
 * (out then holds the name unchanged). */
bool mf_normalize_llama_name(const char *name, char *out, size_t cap);

/* ---- readers ------------------------------------------------------------- */
tport_status mf_read_gguf(tport_model_file *mf, mf_cursor *c);
/* Big-endian GGUF: copies each tensor's data into owned memory with the
 * multi-byte fields swapped; refuses types whose big-endian layout is not
 * known. */
tport_status mf_gguf_swap_tensor_data(tport_model_file *mf, const mf_cursor *c);
tport_status mf_read_ggml_legacy(tport_model_file *mf, mf_cursor *c);
/* Multi-part GGML/GGMF llama (formats.md 1.7): when token_embd is narrower
 * than n_embd, reads FILE.1 ... and concatenates every tensor's parts. */
tport_status mf_merge_parts(tport_model_file *mf, const mf_cursor *c, uint32_t n_embd);
/* Opens one part of a multi-part model as it is (no merging, no joining
 * of split or sharded files, no companion config). */
tport_status mf_open_part(const char *path, tport_model_file **out);

/* ---- models in several files (model_parts.c) ------------------------------ */
/* mf_open_part of part k (0-based) of n of `model`; the error names both. */
tport_status mf_parts_open(const char *model, const char *path, uint32_t k, uint32_t n, const char *what,
                           tport_model_file **out);
/* Refuses a tensor name found in two of the n files (naming both);
 * *total gets the tensor count of all of them. */
tport_status mf_parts_check_unique(tport_model_file *const *parts, uint32_t n, uint64_t *total);
/* top takes over the n open part files (closed with it) and appends their
 * tensors, zero copy.  On error nothing was taken over. */
tport_status mf_parts_adopt(tport_model_file *top, tport_model_file **parts, uint32_t n);
/* Closes the part files (tport_model_file_close). */
void mf_parts_close(tport_model_file *mf);
/* Appends to mf->notes ("; " between notes). */
void mf_add_note(tport_model_file *mf, const char *note);
/* A split GGUF (split.count > 1): opens the other parts beside *mfp and
 * reads them as one model; when *mfp is not the first part, *mfp becomes
 * the first part's model file, holding the given one as a part.  On error
 * *mfp is unchanged (and still the caller's). */
tport_status mf_gguf_join_split(tport_model_file **mfp);
/* Sharded safetensors: true if the bytes look like an index file (a JSON
 * object with a "weight_map"). */
bool mf_st_index_sniff(const mf_cursor *c);
/* Reads an index file: every shard it names, beside it, as one model. */
tport_status mf_read_st_index(tport_model_file *mf, mf_cursor *c);
/* The file to open for `path`: a folder's model.safetensors.index.json
 * or model.safetensors; for a shard NAME-0000K-of-0000N.safetensors with
 * NAME.safetensors.index.json beside it, that index (*shard set).  NULL
 * in *out: open path itself.  *out is malloc'ed. */
tport_status mf_st_resolve_path(const char *path, char **out, bool *shard);
/* On-disk ggml type code at a quantization version (0, 1, 2) -> exact
 * layout-revision type id; false if that code cannot occur. */
bool mf_legacy_map_type(uint32_t code, int qnt, tport_type_id *out);
/* The ggml examples' files (gpt-2, gpt-j, gpt-neox) behind a 'ggml' magic:
 * OK when one layout fits and was read; UNSUPPORTED when none fits (then
 * `why` lists each layout's reason and *progress says how far the best
 * got: 1 = its vocabulary count matched n_vocab); other codes are errors. */
tport_status mf_read_ggml_example(tport_model_file *mf, mf_cursor *c, char *why, size_t cap, int *progress);
tport_status mf_read_llama2c(tport_model_file *mf, mf_cursor *c);
tport_status mf_read_safetensors(tport_model_file *mf, mf_cursor *c);
/* PyTorch checkpoints (torch.save's zip archive, or the legacy pickle
 * stream) through the restricted unpickler (pytorch_*.c). */
tport_status mf_read_pytorch(tport_model_file *mf, mf_cursor *c);
bool mf_pytorch_sniff(const mf_cursor *c);
bool mf_pytorch_legacy_sniff(const mf_cursor *c);
/* Hugging Face config.json / Meta params.json beside mf->path
 * (llama_config.c): hyperparameters, and HF's q/k un-permuted.  Without
 * the file (or from memory) only the embedding's shape is used. */
tport_status mf_apply_hf_config(tport_model_file *mf, const mf_cursor *c);
tport_status mf_apply_meta_params(tport_model_file *mf, const mf_cursor *c);
struct cJSON;
/* The JSON file `name` (a relative path) in model_path's folder, parsed
 * (at most 4 MiB read); NULL when absent or not JSON (llama_config.c). */
struct cJSON *mf_read_beside(const char *model_path, const char *name);
/* A JSON number that is a non-negative integer below 2^53 (needs cJSON). */
bool mf_json_uint(const struct cJSON *j, uint64_t *out);
/* True if the bytes look like a legacy (headerless) llama2.c checkpoint. */
bool mf_llama2c_sniff(const mf_cursor *c);

/* ---- metadata built by a reader (kv_build.c) ---------------------------- */
/* Appends a key (or replaces its value if set already); arrays and
 * strings must be memory owned by mf. */
/* A piece of a SentencePiece tokenizer.model (spm_model.c): its text
 * (len bytes into the parsed data, no NUL inside), score and type
 * (sentencepiece's numbers, which GGUF's token types share: 1 normal,
 * 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte). */
typedef struct spm_piece {
    const uint8_t *text;
    uint32_t len;
    float score;
    int32_t type;
} spm_piece;
/* The pieces of a ModelProto of size bytes (*out malloc'ed); errors name
 * path and the byte. */
tport_status mf_spm_parse(const uint8_t *data, size_t size, const char *path, spm_piece **out, int32_t *n);

tport_kv *mf_kv_add(tport_model_file *mf, const char *key, tport_kv_type type);
tport_status mf_kv_add_u32(tport_model_file *mf, const char *key, uint32_t v);
tport_status mf_kv_add_f32(tport_model_file *mf, const char *key, float v);
tport_status mf_kv_add_bool(tport_model_file *mf, const char *key, bool v);
tport_status mf_kv_add_str(tport_model_file *mf, const char *key, const char *s);
tport_status mf_kv_add_array(tport_model_file *mf, const char *key, tport_kv_type elem, uint64_t n, void *arr);
/* Hugging Face tokenizer.json + tokenizer_config.json beside mf->path
 * (hf_tokenizer.c): the tokenizer.* keys as llama.cpp's converter writes
 * them.  OK without a tokenizer.json; `model_type` picks defaults. */
tport_status mf_hf_tokenizer(tport_model_file *mf, const mf_cursor *c, const struct cJSON *config);
/* A Unigram tokenizer.json's normalizer and pre-tokenizer as the GGUF
 * flags of llama.cpp's UGM tokenizer (hf_unigram.c); the charsmap is
 * owned by mf.  What it does not implement is refused, naming it. */
typedef struct mf_unigram_norm {
    bool add_prefix, remove_ws;
    uint8_t *charsmap;
    size_t charsmap_len;
} mf_unigram_norm;
tport_status mf_hf_unigram_norm(tport_model_file *mf, const char *path, const struct cJSON *root,
                                mf_unigram_norm *out);
/* Hugging Face config.json (hf_arch.c): the architecture of its model
 * class, that architecture's GGUF keys, and the tensors renamed and laid
 * out as llama.cpp's converter writes them; a class without a row is
 * refused, naming it. */
tport_status mf_hf_map_config(tport_model_file *mf, const mf_cursor *c, const struct cJSON *config);
/* A 2-D f32/f16/bf16 tensor transposed into owned memory (ne swapped):
 * GPT-2's Conv1D weights, ONNX MatMul weights ([in, out]). */
tport_status mf_transpose_2d(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t);
/* ONNX models (onnx_read.c): weights by the graph's structure, then
 * config.json beside as for a Hugging Face folder. */
tport_status mf_read_onnx(tport_model_file *mf, mf_cursor *c);
bool mf_onnx_sniff(const mf_cursor *c);

/* Defaults applied after a reader filled what the file gives. */
void mf_hparams_defaults(tport_mf_hparams *hp);
void mf_vocab_init(tport_vocab *v);

#endif

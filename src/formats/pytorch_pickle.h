/* A restricted unpickler for PyTorch state dicts (private to src/formats/).
 *
 * Python's pickle runs whatever a file names (any callable with any
 * arguments); this one interprets only the opcodes a torch.save'd state
 * dict uses and only these globals, each as data, never as code:
 *
 *   collections.OrderedDict              -> an empty dict
 *   torch._utils._rebuild_tensor_v2      -> a tensor (storage, offset, size, stride)
 *   torch._utils._rebuild_parameter      -> its tensor argument
 *   torch.{Float,Half,BFloat16,Char,Byte,Short,Int,Long,Double,Bool}Storage
 *                                        -> a storage type tag
 *
 * and the persistent ids ('storage', type, key, location, numel[, view]).
 * Any other global is refused with its name; any other opcode with its
 * byte and offset.  Every length, index and count is bounded by the input;
 * memory is an arena with a budget; nothing recurses over the input. */
#ifndef TPORT_FORMATS_PYTORCH_PICKLE_H
#define TPORT_FORMATS_PYTORCH_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pk_kind {
    PK_NONE, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_TUPLE, PK_LIST, PK_DICT,
    PK_GLOBAL,   /* one of the allowed globals (callable or storage type) */
    PK_STORAGE,  /* a persistent id: a storage in the archive           */
    PK_TENSOR,
} pk_kind;

typedef enum pk_global {
    PKG_ORDERED_DICT = 1, PKG_REBUILD_TENSOR_V2, PKG_REBUILD_PARAMETER, PKG_STORAGE_TYPE,
} pk_global;

#define PK_MAX_DIMS 8

typedef struct pk_obj pk_obj;
struct pk_obj {
    pk_kind kind;
    int64_t i;              /* INT, BOOL                                  */
    double f;               /* FLOAT                                      */
    const char *s;          /* STR (NUL-terminated copy), GLOBAL's name   */
    size_t len;             /* STR bytes                                  */
    pk_obj **items;         /* TUPLE/LIST: n items; DICT: n keys then... */
    pk_obj **values;        /* DICT: n values                             */
    size_t n, cap;
    /* GLOBAL */
    pk_global global;
    int dtype;              /* storage types: a tport_type_id, -1 unsupported */
    int elem_size;          /* storage types: bytes per element           */
    /* STORAGE: dtype/elem_size of its type, key, numel */
    const char *key;
    int64_t numel;
    /* TENSOR */
    pk_obj *storage;
    int64_t offset;
    int n_dims;
    int64_t size[PK_MAX_DIMS], stride[PK_MAX_DIMS];
};

typedef struct pk_arena pk_arena;

/* Unpickles data[0..n) (one pickle, up to its STOP) into objects allocated
 * from a new arena (*arena, free with pk_arena_free even on error).
 * *used gets the bytes consumed.  On error returns false with a message
 * "offset N: what" in err (offsets relative to data). */
bool pk_unpickle(const uint8_t *data, size_t n, pk_arena **arena, pk_obj **out, size_t *used, char *err,
                 size_t cap);
void pk_arena_free(pk_arena *a);

/* The value of key `k` (a string) in a DICT, or NULL. */
const pk_obj *pk_dict_get(const pk_obj *d, const char *k);

#endif

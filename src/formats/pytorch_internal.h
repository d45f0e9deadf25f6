/* PyTorch checkpoints (private to src/formats/): the two containers
 * (pytorch_zip.c: torch.save's zip archive; pytorch_legacy.c: the older
 * pickle stream) find the state dict and the storages' bytes, then
 * pytorch_state.c turns them into tensors and pytorch_layout.c applies the
 * Meta or Hugging Face llama layout and its config. */
#ifndef TPORT_FORMATS_PYTORCH_INTERNAL_H
#define TPORT_FORMATS_PYTORCH_INTERNAL_H

#include "formats/mf_internal.h"
#include "formats/pytorch_pickle.h"

typedef struct pt_storage {
    const pk_obj *obj;      /* its persistent id: type, key, numel          */
    const uint8_t *data;    /* its bytes: into the mapping or owned memory  */
    uint64_t nbytes;
    uint64_t file_offset;   /* where the bytes are in the file, if in_map   */
    bool in_map;
} pt_storage;

/* The state dict in an unpickled object: the dict itself, or its
 * "state_dict" / "model" entry when the tensors are one level down.
 * NULL (with an error recorded) if there is none. */
const pk_obj *pt_state_dict(const mf_cursor *c, uint64_t at, const pk_obj *root);

/* The distinct storages the state dict's tensors use (by key), into
 * *out (malloc'd; *n entries, data not yet set). */
tport_status pt_collect_storages(const mf_cursor *c, uint64_t at, const pk_obj *dict, pt_storage **out, size_t *n);

/* Every tensor of the state dict into mf (strides and storage offsets
 * honoured: non-contiguous views are gathered into owned memory).  *hf
 * says whether the names are Hugging Face's (model.layers..., lm_head). */
tport_status pt_build_tensors(tport_model_file *mf, const mf_cursor *c, uint64_t at, const pk_obj *dict,
                              const pt_storage *st, size_t n_st, bool *hf);

tport_status pt_read_zip(tport_model_file *mf, mf_cursor *c, bool *hf);
tport_status pt_read_legacy(tport_model_file *mf, mf_cursor *c, bool *hf);

#endif

/* Looking up GGUF metadata and turning it into hyperparameters and a
 * vocabulary (private to src/formats/). */
#ifndef TPORT_FORMATS_GGUF_META_H
#define TPORT_FORMATS_GGUF_META_H

#include "formats/mf_internal.h"

/* Bytes of one array element in memory (see tport_kv), 0 if unknown. */
size_t mf_kv_elem_size(uint32_t type);
const tport_kv *mf_kv_find(const tport_model_file *mf, const char *key);
/* Integer value of any integer kv type that fits in u32; false if absent
 * or of another type. */
bool mf_kv_u32(const tport_model_file *mf, const char *key, uint32_t *out);
bool mf_kv_f32(const tport_model_file *mf, const char *key, float *out);
/* Fills arch, quant_version, file_type, hp and vocab from the kvs. */
tport_status mf_gguf_apply_metadata(tport_model_file *mf, const mf_cursor *c);

#endif

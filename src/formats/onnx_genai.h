/* onnxruntime-genai's genai_config.json beside an ONNX model
 * (onnx_genai.c).  Private to src/formats/. */
#ifndef TPORT_FORMATS_ONNX_GENAI_H
#define TPORT_FORMATS_ONNX_GENAI_H

#include <stdbool.h>

#include "formats/mf_internal.h"

/* Reads genai_config.json beside mf->path, if there (*present), after
 * config.json was applied: checks it against the model, applies context
 * length, special tokens and search defaults; refuses what it cannot
 * honour, naming it. */
tport_status mf_onnx_genai_config(tport_model_file *mf, const mf_cursor *c, bool *present);

#endif

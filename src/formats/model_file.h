/* The model-file description (include/tport/model_file.h) and what only
 * the library does with it. */
#ifndef TPORT_FORMATS_MODEL_FILE_H
#define TPORT_FORMATS_MODEL_FILE_H

#include "tport/model_file.h"

/* Says the bytes [p, p + n) of the file's mapping will not be needed soon
 * (a weight now kept by a backend): the whole pages among them leave the
 * process's resident memory, to be read from the file again if touched.
 * Nothing happens for memory that is not the file's read-only mapping. */
void tport_model_file_release(const tport_model_file *mf, const void *p, size_t n);
/* Copies the n bytes at p into dst.  Bytes of the file's mapping are read
 * from the file (pread) instead of through the mapping, whose page faults
 * would map up to 16 neighbouring cached pages each: the rows of 1024
 * random tokens left 48 MiB of TinyLlama's 66 MiB token embedding
 * resident.  Other memory is copied. */
tport_status tport_model_file_copy(const tport_model_file *mf, const void *p, void *dst, size_t n);

/* The ggml examples' GGML-container files (formats/ggml_example_read.c)
 * name tensors their own way.  Pair i of the layout that architecture ARCH
 * (GGUF's name: gpt2, starcoder, gptj, gptneox, mpt) is written in: *gguf
 * the GGUF name, *file the example's, "%d" the layer in both.  False past
 * the last pair, and for an architecture without such a layout. */
bool mf_example_name_at(const char *arch, int i, const char **gguf, const char **file);

#endif

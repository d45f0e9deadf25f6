/* The GGUF writer is public: include/tport/gguf.h. */
#ifndef TPORT_FORMATS_GGUF_WRITE_H
#define TPORT_FORMATS_GGUF_WRITE_H

#include "formats/model_file.h"
#include "tport/gguf.h"

#endif

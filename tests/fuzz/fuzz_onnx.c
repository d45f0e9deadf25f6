/* libFuzzer target: ONNX's protobuf wire format.  The bytes go to the
 * protobuf reader itself (onnx_parse: every tensor's data must lie inside
 * the input, read here for ASan) and then through tport_model_file_open_
 * memory, which sniffs them and, for a ModelProto, maps its initializers
 * as the ONNX reader does (external data is refused from memory). */
#include <stdint.h>
#include <stdlib.h>

#include "formats/model_file.h"
#include "formats/onnx_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    onnx_model o;
    volatile uint8_t sink = 0;
    if (onnx_parse(data, size, &o))
        for (uint32_t i = 0; i < o.n_inits; i++) {
            const onnx_tensor *t = &o.inits[i];
            if (t->data_len) {
                if (t->data < data || t->data + t->data_len > data + size)
                    abort();
                sink ^= t->data[0] ^ t->data[t->data_len - 1];
            }
        }
    onnx_free(&o);
    tport_model_file *mf = NULL;
    if (tport_model_file_open_memory(data, size, "fuzz.onnx", &mf) == TPORT_STATUS_OK) {
        for (int i = 0; i < mf->n_tensors; i++) {
            const tport_mf_tensor *t = &mf->tensors[i];
            if (t->nbytes)
                sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->nbytes - 1];
        }
        tport_model_file_close(mf);
    }
    (void)sink;
    return 0;
}

/* ONNX models read as protobuf (onnx_proto.c): what the weights reader
 * (onnx_read.c) needs of a ModelProto.  Private to src/formats/. */
#ifndef TPORT_FORMATS_ONNX_PROTO_H
#define TPORT_FORMATS_ONNX_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#define ONNX_MAX_DIMS 8

#define ONNX_MAX_ATTRS 16

enum {
    ONNX_FLOAT = 1,
    ONNX_UINT8 = 2,
    ONNX_INT8 = 3,
    ONNX_FLOAT16 = 10,
    ONNX_BFLOAT16 = 16,
    ONNX_UINT4 = 21,
    ONNX_INT4 = 22,
};

typedef struct onnx_tensor {
    char *name;
    int32_t data_type;
    int n_dims;
    int64_t dims[ONNX_MAX_DIMS];   /* outermost first */
    const uint8_t *data;           /* raw_data or packed float_data: into the input */
    uint64_t data_len, data_offset;
    bool from_float_data;
    bool external;                 /* data_location = EXTERNAL */
    char *location;                /* external_data entries */
    uint64_t ext_offset, ext_length;
    bool has_ext_length;
} onnx_tensor;

/* An integer attribute (AttributeProto.i); other kinds are not kept. */
typedef struct onnx_attr {
    char *name;
    int64_t i;
} onnx_attr;

typedef struct onnx_node {
    char *name, *op_type, *domain;
    char **inputs, **outputs;
    uint32_t n_inputs, n_outputs;
    onnx_attr attrs[ONNX_MAX_ATTRS];
    uint32_t n_attrs;
} onnx_node;

typedef struct onnx_model {
    uint64_t ir_version, opset;
    char *producer, *producer_version;
    onnx_node *nodes;
    uint32_t n_nodes;
    onnx_tensor *inits;
    uint32_t n_inits;
    char **inputs;                 /* the graph's input names */
    uint32_t n_inputs;
    const char *err;               /* on failure: what, and where */
    uint64_t err_at;
} onnx_model;

/* Parses a ModelProto; false with o->err / o->err_at set.  onnx_free
 * in either case. */
bool onnx_parse(const uint8_t *data, uint64_t size, onnx_model *o);
void onnx_free(onnx_model *o);
/* The integer attribute `name` of a node; false if it has none. */
bool onnx_attr_int(const onnx_node *nd, const char *name, int64_t *v);
/* True if the bytes start like a ModelProto. */
bool onnx_sniff(const uint8_t *data, uint64_t size);

#endif

/*
 * tport/backend.h — the tensorport backend plug-in ABI.
 *
 * This one header is the whole contract between tensorport (the "host") and a
 * compute backend (the "plug-in").  It includes only <stddef.h>, <stdint.h>
 * and <stdbool.h>; a backend includes nothing else of ours and never links
 * against libtport.  Everything a backend needs from the host (logging, error
 * messages, type traits, reference (de)quantizers) arrives as a table of
 * function pointers.
 *
 * ---------------------------------------------------------------------------
 * Backend author's guide
 * ---------------------------------------------------------------------------
 *
 * A backend is a shared library (a "plug-in") built with your own build
 * system against this header alone.  A step-by-step walk-through is in
 * docs/writing-a-backend.md; examples/out-of-tree-backend is a complete,
 * tested plug-in (F32 add, mul, mul_mat) built only against an installed
 * tensorport.
 *
 * 0. Build and install.
 *    - Compile with -fPIC -fvisibility=hidden; link as a shared library
 *      (CMake: add_library(x MODULE ...)).  Do NOT link libtport or call any
 *      tport_* function: everything you need comes through the host table.
 *      `readelf -d your.so` must show no libtport in NEEDED.
 *    - Name the file lib<something>.so.  The host finds it in any file or
 *      folder listed in TPORT_BACKEND_PATH (':'-separated; in a folder every
 *      *.so, in name order), in <libdir>/tport/backends beside libtport
 *      (pkg-config --variable=backenddir tport; CMake: TPORT_BACKEND_DIR),
 *      or through tport_backend_load(path).  `tport backends` shows what was
 *      found and why anything was refused; `tport check-backend your.so`
 *      checks every op you claim against the reference CPU backend.
 *
 * 1. Export exactly one symbol with C linkage:
 *
 *        TPORT_BACKEND_EXPORT
 *        const tport_backend_api *tport_backend_entry(const tport_host_api *host);
 *
 *    - If host->abi_major differs from TPORT_ABI_MAJOR, use nothing of the
 *      host table but the fields every major keeps (below) and return your
 *      table unchanged (abi_major = yours) or NULL; the host refuses it and
 *      names both versions.  You may call host->error() first to say why.
 *    - Otherwise set abi_major = TPORT_ABI_MAJOR and abi_minor = the highest
 *      minor both know, min(host->abi_minor, TPORT_ABI_MINOR) — never more
 *      than the host's — and keep the host pointer for later calls.
 *    - Do no other work in the entry point and nothing at all in load-time
 *      constructors: the host reads required_isa from your table BEFORE it
 *      calls anything else of yours, so code built for an instruction set the
 *      CPU lacks must not run before that check.
 *    - The entry point may be called more than once (tport check-backend
 *      drives it with test hosts of other minors, then again with the real
 *      one); each call rebinds the host and returns the table for it.
 *
 *    Kept in every major, so both sides can read each other's version and a
 *    plug-in can explain a refusal: tport_host_api starts with struct_size,
 *    abi_major, abi_minor, reserved, log, error; tport_backend_api starts
 *    with struct_size, abi_major, abi_minor, reserved.
 *
 * 2. The table.  Fill in the slots you implement; leave the others NULL.  A
 *    NULL slot means "unsupported" and is never called.  Required (else the
 *    plug-in is refused): name, init, shutdown, device_count, device_info,
 *    supports_op, compute.  Optional: score (NULL = 1).
 *    - name: 1..63 bytes of [A-Za-z0-9_.-], lower case by convention ("cpu",
 *      "myaccel").  Files giving the same name compete: the highest score is
 *      used, the others are reported as shadowed.  Name and version strings
 *      must stay valid until the library is unloaded.
 *    - required_isa: the TPORT_ISA_* bits your code was compiled for (e.g.
 *      from __AVX2__, __FMA__).  The host checks them against cpuid and the
 *      OS-enabled register state and refuses the plug-in if any is missing.
 *    - score(): called once, after the ISA check, before init; cheap, no
 *      device work.  Higher is better; 0 = cannot run on this machine.
 *
 * 3. Lifetime: entry -> score -> init -> (device_count, device_info,
 *    supports_op, compute)* -> shutdown -> the host unloads the library.
 *    init may be called more than once (several independent instances):
 *    keep state in what init returns, not in globals.  No thread of yours
 *    may outlive shutdown.  Do not rely on static destructors or atexit.
 *    A refused plug-in is unloaded without init or shutdown being called.
 *
 * 4. Threading: the host calls a backend instance from one thread at a time
 *    (it serialises calls per instance).  A backend may run its own worker
 *    threads inside compute (graph->n_threads is the user's budget); host
 *    services may be called from any thread.
 *
 * 5. Errors are values: every fallible slot returns a tport_status code
 *    (TPORT_STATUS_OK == 0).  Attach a message with
 *        return host->error(TPORT_STATUS_UNSUPPORTED, "op %u on type %u", op, type);
 *    Never call exit() or abort(); never let a signal escape on bad input.
 *    A plug-in whose init fails or that reports no devices is skipped with
 *    the message; every other backend keeps working.  What the host does with
 *    a plug-in that breaks these rules (bad tables, names, counts, statuses,
 *    hangs under --probe) is listed in docs/writing-a-backend.md, section 8.
 *
 * 6. Data: a compute call receives a tport_graph_view: an array of tensor
 *    records (op, type, shape ne[], byte strides nb[], sources, data).  Nodes
 *    whose `data` is non-NULL live in host memory (every buffer is host
 *    memory in ABI 1.0).  Execute the node indices in the order given; the
 *    host has allocated every destination.  Shapes follow ggml's
 *    convention: ne[0] is the innermost (fastest) dimension, nb[i] is the
 *    byte stride of dimension i (nb[0] = bytes per block); unused dimensions
 *    have ne == 1.  Sources may be strided views (padded rows, transposes):
 *    check nb[] rather than assuming contiguity.  Read a parameter block
 *    only if params_size >= the size you read.
 *
 * 7. Capabilities are data: supports_op() is asked for one node with its
 *    real types, shapes, strides and parameters before the host assigns it
 *    to you.  Answer false for anything you do not fully handle, including
 *    ids you do not know: ids are append-only and new ones appear in later
 *    minors.  What you decline runs on another backend (in the end the
 *    CPU); compute() is only given nodes you accepted.
 *
 * 8. Structs you receive (host table, graph and tensor views, device_info):
 *    read no field that ends past its struct_size; write into device_info
 *    only up to out->struct_size.
 *
 * 9. Device memory (since 1.1; every slot below may stay NULL, which keeps
 *    the 1.0 host-memory contract exactly).  A device that has memory of its
 *    own sets TPORT_DEVICE_CAP_DEVICE_MEMORY in device_info.caps and fills
 *    buffer_alloc, buffer_free, tensor_write and tensor_read (buffer_fill,
 *    buffer_copy, import_host, tensor_alloc_size, compute_async, wait and
 *    forget_graph are optional).  Then:
 *    - Buffers are opaque 64-bit handles (tport_buffer, never 0) that you
 *      make and the host only ever gives back to you.  A tensor in your
 *      memory is named by (buffer, offset) in tport_tensor_view; its `data`
 *      is NULL unless buffer_alloc returned a host pointer for that buffer.
 *    - Weights are written once, at load, with tensor_write: the view gives
 *      the tensor's type and shape, so you may store it in a layout of your
 *      own (repacked blocks); say how many bytes that takes with
 *      tensor_alloc_size.  You may refuse to read such a tensor back
 *      (TPORT_STATUS_UNSUPPORTED): the host keeps the file's bytes.
 *    - Activations that cross between you and another backend are staged
 *      by the host: tensor_read of your result into host memory, tensor_write
 *      of another's result into your buffer.  A node is given to you only
 *      if each operand is in your memory, or in host memory when you set
 *      TPORT_DEVICE_CAP_HOST_READABLE.
 *    - Operations on one device (writes, reads, fills, copies, computes)
 *      take effect in the order they are submitted, as if run one after
 *      the other.  A slot with a `ticket` out-parameter may return before
 *      the work is done and set *ticket to a nonzero value; 0 (or a NULL
 *      ticket pointer) means "done on return".  Tickets of one device grow
 *      monotonically; wait(t) returns once t and everything submitted
 *      before it are done, TPORT_STATUS_TIMEOUT after timeout_ns (never a
 *      hang), or TPORT_STATUS_DEVICE_LOST.
 *    - The host's promises: it does not read or write host memory that it
 *      handed to tensor_write or tensor_read (the src/dst pointer), nor a
 *      buffer's host pointer, while a ticket covering that call is pending;
 *      it never passes a handle, ticket or graph key of yours to another
 *      plug-in; it frees every buffer it allocated before shutdown.
 *    - graph->graph_key is equal for two graph views of equal structure
 *      (ops, types, shapes, strides, parameters and where weights live) and
 *      graph->bind_key for equal placement of the other operands.  Record
 *      work once per graph_key and replay it; forget_graph(key) says a key
 *      will not come back (0: none of the keys will).
 *    A host-memory backend (no DEVICE_MEMORY cap, like the CPU) may still
 *    fill buffer_alloc (returning a host pointer), tensor_alloc_size and
 *    tensor_write to keep weights in a layout of its own: tensor_alloc_size
 *    returning 0 for a weight means "leave it where it is".  Its
 *    tensor_write may return a ticket and re-encode when waited for; the
 *    source stays in place until then, and a graph given the weight
 *    before the wait may read the source (the CPU backend does).
 *
 * ---------------------------------------------------------------------------
 * Versioning policy
 * ---------------------------------------------------------------------------
 *
 * - TPORT_ABI_MAJOR changes only when something already published changes
 *   meaning or layout.  A host refuses a plug-in of another major, naming
 *   both versions.
 * - TPORT_ABI_MINOR grows when something is appended: a slot at the end of a
 *   table, a field at the end of a struct, an op/type/status id.  The
 *   negotiated minor is min(host minor, plug-in minor); each side uses only
 *   what that minor defines.
 * - Every struct starts with `uint32_t struct_size`, the size its writer
 *   knows.  Readers never read a field that ends past struct_size; a larger
 *   size from a newer peer is fine, the tail is ignored.
 * - Each ABI struct's minimum size for this major is given by the
 *   TPORT_*_SIZE_1_0 macros; a table smaller than that is refused.
 * - Ids (ops, types, statuses, device kinds, ISA bits) are explicitly
 *   numbered, never reused, never renumbered.
 * - tests/plugins/test_abi_layout.c freezes sizeof/offsetof of every struct
 *   and every id of 1.0 (x86-64 System V): a layout change without a
 *   version change fails the build's tests.
 * - The CHANGELOG below lists what each minor added.
 *
 * CHANGELOG
 *   1.0  first version.
 *   1.1  device memory (section 9 of the guide): tport_device_info gains
 *        caps, mem_alignment and max_buffer_size; tport_tensor_view gains
 *        buffer and offset; tport_graph_view gains graph_key and bind_key;
 *        tport_backend_api gains buffer_alloc, buffer_free,
 *        tensor_alloc_size, tensor_write, tensor_read, buffer_fill,
 *        buffer_copy, import_host, compute_async, wait and forget_graph;
 *        statuses TIMEOUT and NOT_ADDRESSABLE; memory kinds and usages.
 *        Ops of the architectures beyond llama (ids 16..47 reserved for
 *        them): GELU_F16 (16), GELU_ERF (17), TANH (18), CLAMP (19,
 *        tport_params_clamp), SOFT_MAX_EXT (20, tport_params_soft_max_ext).
 *        Fused ops for speed (ids 48..63 reserved for them): FLASH_ATTN
 *        (48, tport_params_flash_attn).
 *   1.2  type ids: MXFP4 (39, ggml's id; the weights of gpt-oss files);
 *        31..33 and 36 (removed ggml types that files still carry: the
 *        host re-encodes them before any backend sees them, so no plug-in
 *        needs to know them).  No struct changed: a 1.0 or 1.1 plug-in
 *        loads as before and declines the ids it does not know.
 *   1.3  type ids (ggml's, issue 39): IQ2_XXS (16), IQ2_XS (17), IQ3_XXS
 *        (18), IQ1_S (19), IQ3_S (21), IQ2_S (22), I64 (27), F64 (28),
 *        IQ1_M (29), TQ1_0 (34), TQ2_0 (35), NVFP4 (40), Q1_0 (41), Q2_0
 *        (42); older plug-ins decline them.
 *        Mixture-of-experts ops (ids 22..28): MUL_MAT_ID (22), ARGSORT_TOP_K
 *        (23, tport_params_top_k), SIGMOID (24), SUM_ROWS (25), DIV (26),
 *        ADD_ID (27), SWIGLU_OAI (28, tport_params_swiglu_oai; gpt-oss).
 *        A plug-in that negotiated a minor below 3 is never asked about,
 *        nor given, a node of an op of 1.3: the host runs it elsewhere.
 *        RoPE and attention extensions: ROPE_EXT (21,
 *        tport_params_rope_ext: frequency factors, YaRN, attention
 *        factor); FLASH_ATTN_EXT (49, tport_params_flash_attn_ext: logit
 *        soft-capping, attention sinks); tport_tensor_view gains src_more
 *        (operands 4 and 5).
 *   1.4  EXPERT_GROUPS (32, tport_params_expert_groups): DeepSeek-V3's
 *        grouped expert routing.  A plug-in of an older minor is never
 *        asked about it.
 *   1.5  device cap TPORT_DEVICE_CAP_F16_PRODUCTS (1 << 4): a device
 *        declares that its f32 matrix products round their operands to
 *        f16.  No struct changed; the host ignores the bit from a plug-in
 *        that negotiated an older minor.
 */
#ifndef TPORT_BACKEND_H
#define TPORT_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPORT_ABI_MAJOR 1
#define TPORT_ABI_MINOR 5

#if defined(_WIN32)
#define TPORT_BACKEND_EXPORT __declspec(dllexport)
#else
#define TPORT_BACKEND_EXPORT __attribute__((visibility("default")))
#endif

/* Offset just past a member: the struct_size a writer of that member needs. */
#define TPORT_SIZE_THROUGH(type, member) \
    (offsetof(type, member) + sizeof(((type *)0)->member))

/* ---- status codes (append-only) ---------------------------------------- */
typedef int32_t tport_status;
enum {
    TPORT_STATUS_OK = 0,
    TPORT_STATUS_ERROR = 1,            /* unspecified failure */
    TPORT_STATUS_UNSUPPORTED = 2,      /* op, type or feature not supported */
    TPORT_STATUS_INVALID_ARGUMENT = 3,
    TPORT_STATUS_OUT_OF_MEMORY = 4,
    TPORT_STATUS_VERSION_MISMATCH = 5, /* ABI version cannot be agreed */
    TPORT_STATUS_DEVICE_LOST = 6,
    TPORT_STATUS_IO = 7,               /* file or I/O error */
    TPORT_STATUS_BAD_FORMAT = 8,       /* malformed input data */
    /* since 1.1 */
    TPORT_STATUS_TIMEOUT = 9,          /* a wait ran past its timeout */
    TPORT_STATUS_NOT_ADDRESSABLE = 10, /* memory the caller cannot reach */
};

/* ---- log levels --------------------------------------------------------- */
enum {
    TPORT_LOG_ERROR = 0,
    TPORT_LOG_WARN = 1,
    TPORT_LOG_INFO = 2,
    TPORT_LOG_DEBUG = 3,
};

/* ---- tensor type ids (append-only) --------------------------------------
 * Today's types use ggml's numbers (so GGUF type ids map one to one).
 * Historical layout revisions whose bytes differ from today's have ids of
 * their own from 200 on; see docs/formats in the source tree.            */
typedef uint32_t tport_type_id;
enum {
    TPORT_TYPE_F32 = 0,
    TPORT_TYPE_F16 = 1,
    TPORT_TYPE_Q4_0 = 2,
    TPORT_TYPE_Q4_1 = 3,
    TPORT_TYPE_Q5_0 = 6,
    TPORT_TYPE_Q5_1 = 7,
    TPORT_TYPE_Q8_0 = 8,
    TPORT_TYPE_Q8_1 = 9,
    TPORT_TYPE_Q2_K = 10,
    TPORT_TYPE_Q3_K = 11,
    TPORT_TYPE_Q4_K = 12,
    TPORT_TYPE_Q5_K = 13,
    TPORT_TYPE_Q6_K = 14,
    TPORT_TYPE_Q8_K = 15,
    TPORT_TYPE_IQ2_XXS = 16, /* 1.3: {f16 d; u16 qs[32]}, 256/block          */
    TPORT_TYPE_IQ2_XS = 17,  /* 1.3: {f16 d; u16 qs[32]; u8 scales[8]}       */
    TPORT_TYPE_IQ3_XXS = 18, /* 1.3: {f16 d; u8 qs[96]}, 256/block           */
    TPORT_TYPE_IQ1_S = 19,   /* 1.3: {f16 d; u8 qs[32]; u16 qh[8]}           */
    TPORT_TYPE_IQ4_NL = 20,
    TPORT_TYPE_IQ3_S = 21,   /* 1.3: {f16 d; u8 qs[64], qh[8], signs[32], scales[4]} */
    TPORT_TYPE_IQ2_S = 22,   /* 1.3: {f16 d; u8 qs[64], qh[8], scales[8]}     */
    TPORT_TYPE_IQ4_XS = 23,
    TPORT_TYPE_I8 = 24,
    TPORT_TYPE_I16 = 25,
    TPORT_TYPE_I32 = 26,
    TPORT_TYPE_I64 = 27,     /* 1.3 */
    TPORT_TYPE_F64 = 28,     /* 1.3 */
    TPORT_TYPE_IQ1_M = 29,   /* 1.3: {u8 qs[32], qh[16], scales[8]}, 256/block */
    TPORT_TYPE_BF16 = 30,
    /* removed ggml types, kept under ggml's ids (ggml never reuses them,
     * so a GGUF type id still maps one to one): Q4_0 or IQ4_NL blocks of
     * 4 or 8 consecutive rows interleaved, {f16 d[R]; u8 qs[16 R]} per
     * 32 columns; read only, re-encoded losslessly at load.  ggml's 37
     * and 38 (IQ4_NL_4_8, _8_8) were only ever commented-out names. */
    TPORT_TYPE_Q4_0_4_4 = 31,  /* 4 rows, 4-byte chunks, nibbles ^ 0x88 */
    TPORT_TYPE_Q4_0_4_8 = 32,  /* 4 rows, 8-byte chunks, nibbles ^ 0x88 */
    TPORT_TYPE_Q4_0_8_8 = 33,  /* 8 rows, 8-byte chunks, nibbles ^ 0x88 */
    TPORT_TYPE_IQ4_NL_4_4 = 36, /* 4 rows, 4-byte chunks, indices as-is  */
    TPORT_TYPE_TQ1_0 = 34, /* 1.3: {u8 qs[48], qh[4]; f16 d}, base-3 trits, 256/block */
    TPORT_TYPE_TQ2_0 = 35, /* 1.3: {u8 qs[64]; f16 d}, 2-bit trits, 256/block */
    TPORT_TYPE_MXFP4 = 39, /* {u8 e (E8M0 scale); u8 qs[16] (E2M1)}, 32/block */
    TPORT_TYPE_NVFP4 = 40, /* 1.3: {u8 d[4] (UE4M3); u8 qs[32] (E2M1)}, 64/block */
    TPORT_TYPE_Q1_0 = 41,  /* 1.3: {f16 d; u8 qs[16]} sign bits, 128/block */
    TPORT_TYPE_Q2_0 = 42,  /* 1.3: {f16 d; u8 qs[16]} 2 bits, 64/block     */
    /* historical revisions (QNTn = ggml quantization version) */
    TPORT_TYPE_Q4_0_QNT0 = 200, /* {f32 d; u8 qs[16]} interleaved nibbles  */
    TPORT_TYPE_Q4_1_QNT0 = 201, /* {f32 d, m; u8 qs[16]} interleaved       */
    TPORT_TYPE_Q4_2_QNT0 = 202, /* {f16 d; u8 qs[8]} 16/block, interleaved */
    TPORT_TYPE_Q4_3_QNT0 = 203, /* {f16 d, m; u8 qs[8]} 16/block           */
    TPORT_TYPE_Q5_0_QNT0 = 204, /* today's struct, interleaved nibbles     */
    TPORT_TYPE_Q5_1_QNT0 = 205,
    TPORT_TYPE_Q8_0_QNT1 = 206, /* {f32 d; i8 qs[32]} (QNT0 and QNT1)       */
    TPORT_TYPE_Q4_0_QNT1 = 207, /* {f32 d; u8 qs[16]} split nibbles         */
    TPORT_TYPE_Q4_1_QNT1 = 208, /* {f32 d, m; u8 qs[16]} split nibbles      */
    /* k-quants of GGML_QKK_64 builds (2023-06-26 .. 2024-05-23): 64-element
     * super-blocks, not marked in files (recognised by tensor byte sizes) */
    TPORT_TYPE_Q2_K_QK64 = 209, /* {u8 scales[4]; u8 qs[16]; f16 d, dmin}   */
    TPORT_TYPE_Q3_K_QK64 = 210, /* {u8 hmask[8]; u8 qs[16]; u8 scales[2]; f16 d} */
    TPORT_TYPE_Q4_K_QK64 = 211, /* {f16 d[2]; u8 scales[2]; u8 qs[32]}      */
    TPORT_TYPE_Q5_K_QK64 = 212, /* {f16 d; i8 scales[4]; u8 qh[8]; u8 qs[32]} */
    TPORT_TYPE_Q6_K_QK64 = 213, /* {u8 ql[32]; u8 qh[16]; i8 scales[4]; f16 d} */
};

/* ---- op ids (append-only) -----------------------------------------------
 * src[i] names the operands.  Parameter blocks are the structs below; a
 * backend must check params_size >= the size it reads.                    */
typedef uint32_t tport_op_id;
enum {
    TPORT_OP_NONE = 0,     /* a leaf: input or weight, nothing to compute */
    TPORT_OP_GET_ROWS = 1, /* dst[:, i] = src0[:, src1[i]] (src1: I32)   */
    TPORT_OP_ADD = 2,      /* dst = src0 + src1, src1 broadcast (repeats) */
    TPORT_OP_MUL = 3,      /* dst = src0 * src1, src1 broadcast           */
    TPORT_OP_SCALE = 4,    /* dst = src0 * p.scale                        */
    TPORT_OP_MUL_MAT = 5,  /* dst[i,j] = sum_k src0[k,i] * src1[k,j];
                              src0 broadcast over dims 2,3 (GQA)          */
    TPORT_OP_RMS_NORM = 6, /* per row: x / sqrt(mean(x^2) + eps)          */
    TPORT_OP_NORM = 7,     /* per row: (x - mean) / sqrt(var + eps)       */
    TPORT_OP_ROPE = 8,     /* rotary embedding; src1: I32 positions[ne2]  */
    TPORT_OP_SOFT_MAX = 9, /* per row: softmax(x * scale + mask); src1
                              optional F32 mask [ne0, ne1] broadcast      */
    TPORT_OP_SILU = 10,
    TPORT_OP_GELU = 11,    /* tanh approximation                          */
    TPORT_OP_SWIGLU = 12,  /* dst = silu(src0) * src1                     */
    TPORT_OP_CPY = 13,     /* dst = src0 converted to dst's type/layout   */
    TPORT_OP_CONT = 14,    /* dst = src0 made contiguous                  */
    TPORT_OP_CONCAT = 15,  /* dst = [src0, src1] along p.dim              */
    /* 48..63: fused ops for speed, since 1.1 */
    TPORT_OP_FLASH_ATTN = 48, /* attention over a KV cache read in place:
        src0 q    F32 [hd, n_head, n]        (n query tokens)
        src1 k    F32/F16 [hd, n_kv, n_head_kv] (strided view of the cache)
        src2 v    same type and shape as k (not transposed)
        src3 mask optional F32 [n_kv, >= n], row t for query token t
        dst  F32 [hd, n_head, n]: for head h, kv head h / (n_head/n_head_kv),
             dst[:, h, t] = sum_j softmax_j(p.scale * q.k_j + mask[j, t]) v_j;
             a row whose mask is all -inf gives zeros                    */
    /* since 1.3 */
    TPORT_OP_FLASH_ATTN_EXT = 49, /* FLASH_ATTN (same operands) plus, from
        tport_params_flash_attn_ext: if p.softcap > 0 each score
        s = p.scale * q.k_j becomes p.softcap * tanh(s / p.softcap) before
        the mask is added; src_more[0] optional F32 sinks [n_head]: head
        h's softmax denominator gains exp(sink_h - max), where max is the
        largest of the row's scores and sink_h (the sink is not scaled and
        adds no value)                                                  */
};
/* Ops of the architectures beyond llama (ids 16..47 are theirs).  A
 * backend that predates them declines them and they run on the CPU. */
enum {
    TPORT_OP_GELU_F16 = 16, /* the tanh GELU as ggml's CPU computes it: 0 for
                               x <= -10, x for x >= 10, otherwise x rounded
                               to f16, gelu of that, rounded to f16       */
    TPORT_OP_GELU_ERF = 17, /* 0.5 x (1 + erf(x / sqrt 2))                 */
    TPORT_OP_TANH = 18,
    TPORT_OP_CLAMP = 19,    /* dst = min(max(src0, p.min), p.max)          */
    TPORT_OP_SOFT_MAX_EXT = 20, /* per row: softmax(x * p.scale + slope_h *
                               mask), h = the row's index in dim 2 (the
                               head); ALiBi slopes from p.max_bias as ggml:
                               n2 = 2^floor(log2 ne2), m0 = 2^(-max_bias/n2),
                               m1 = 2^(-max_bias/2/n2), slope_h = m0^(h+1)
                               if h < n2, else m1^(2(h-n2)+1); max_bias 0
                               gives slope 1 (then it is SOFT_MAX)        */
    /* since 1.3 */
    TPORT_OP_ROPE_EXT = 21, /* ROPE with tport_params_rope_ext; src0, src1 as
        ROPE; src2 optional F32 frequency factors [>= n_dims/2].  As ggml:
        theta_e = pos * base^(-2i/n_dims) / ff[i] (ff = 1 without src2),
        theta_i = freq_scale * theta_e; ext_factor != 0 (YaRN):
        corr = [max(0, floor(c(beta_fast))), min(n_dims-1, ceil(c(beta_slow)))],
        c(b) = n_dims ln(n_ctx_orig / (2 pi b)) / (2 ln base),
        ramp = (1 - clamp((i - corr0) / max(0.001, corr1 - corr0), 0, 1))
               * ext_factor,
        theta = theta_i (1 - ramp) + theta_e ramp,
        m = attn_factor (1 + 0.1 ln(1/freq_scale));  else theta = theta_i,
        m = attn_factor.  The pair rotates by cos(theta) m, sin(theta) m */
};
/* Mixture-of-experts ops, since 1.3 (ids 22..31 and 50..55 are theirs).
 * A plug-in that negotiated an older minor is never asked about them. */
enum {
    /* The expert-indexed product (ggml_mul_mat_id):
        src0 as   [K, N, E] a stack of E matrices of any weight type
        src1 b    F32 [K, n_b, T], n_b = 1 (every slot reads row 0) or
                  n_b = n_used (slot i reads row i)
        src2 ids  I32 [n_used, T], each in [0, E)
        dst       F32 [N, n_used, T]:
                  dst[n, i, t] = sum_k as[k, n, ids[i, t]] * b[k, i % n_b, t]
       An id outside [0, E) is an error of the compute (never a read
       outside the stack).  Dims 3 of every operand are 1.            */
    TPORT_OP_MUL_MAT_ID = 22,
    /* The ids of the p.k largest values of each row (ggml_argsort_top_k):
        src0 F32 [n, rows...], dst I32 [k, rows...]: dst[0..k) of a row are
        the indices of its k largest values in descending order of value;
        equal values keep ascending index order; NaN sorts last.       */
    TPORT_OP_ARGSORT_TOP_K = 23,
    TPORT_OP_SIGMOID = 24,  /* 1 / (1 + exp(-x))                           */
    TPORT_OP_SUM_ROWS = 25, /* dst [1, ne1, ne2, ne3] = the sum of each row */
    TPORT_OP_DIV = 26,      /* dst = src0 / src1, src1 broadcast (as MUL)  */
    /* An indexed bias add (ggml_add_id):
        src0 F32 [n, n_used, T], src1 F32 [n, E] (one bias row per expert),
        src2 ids I32 [n_used, T]: dst[:, i, t] = src0[:, i, t] +
        src1[:, ids[i, t]]; an id outside [0, E) is an error.          */
    TPORT_OP_ADD_ID = 27,
    /* gpt-oss's clamped SwiGLU (ggml_swiglu_oai), tport_params_swiglu_oai:
        src0 gate, src1 up, dst: F32 of one shape;
        x = min(gate, p.limit), y = clamp(up, -p.limit, p.limit),
        dst = x / (1 + exp(-p.alpha x)) * (y + 1)                      */
    TPORT_OP_SWIGLU_OAI = 28,
};
/* Grouped expert routing, since 1.4 (DeepSeek-V3, llama.cpp's
 * n_expert_groups / n_group_used). */
enum {
    /* src0 F32 [n, rows...], n a multiple of p.n_group; dst F32 the same
       shape.  Each row's n values form p.n_group groups of g = n / n_group
       consecutive ones (g >= 2); a group's score is the sum of its two
       largest values (the order of ARGSORT_TOP_K: larger first, NaN last).
       The p.n_group_used groups of largest score (ties: the lower group)
       keep their values; every other value becomes -inf.            */
    TPORT_OP_EXPERT_GROUPS = 32,
};
/* View ops (view, reshape, permute, transpose) never reach a backend: the
 * host resolves them to strides and offsets. */

typedef struct tport_params_scale { float scale; } tport_params_scale;
typedef struct tport_params_norm { float eps; } tport_params_norm;
typedef struct tport_params_soft_max { float scale; } tport_params_soft_max;
typedef struct tport_params_concat { int32_t dim; } tport_params_concat;
typedef struct tport_params_flash_attn { float scale; } tport_params_flash_attn;
enum { TPORT_ROPE_NORMAL = 0, TPORT_ROPE_NEOX = 2 };
typedef struct tport_params_rope {
    int32_t n_dims;    /* rotate the first n_dims of each head (even)   */
    int32_t mode;      /* TPORT_ROPE_NORMAL pairs (2i,2i+1); NEOX pairs
                          (i, i+n_dims/2)                               */
    float freq_base;   /* theta_i = pos * freq_scale * base^(-2i/n_dims) */
    float freq_scale;
} tport_params_rope;
typedef struct tport_params_clamp { float min, max; } tport_params_clamp;
typedef struct tport_params_soft_max_ext { float scale, max_bias; } tport_params_soft_max_ext;
typedef struct tport_params_top_k { int32_t k; } tport_params_top_k; /* since 1.3 */
typedef struct tport_params_swiglu_oai { float alpha, limit; } tport_params_swiglu_oai; /* since 1.3 */
typedef struct tport_params_expert_groups { int32_t n_group, n_group_used; } tport_params_expert_groups; /* 1.4 */
/* since 1.3 */
typedef struct tport_params_rope_ext {
    int32_t n_dims, mode;   /* as tport_params_rope                   */
    float freq_base, freq_scale;
    float ext_factor;       /* 0: no YaRN ramp                        */
    float attn_factor;      /* multiplies cos and sin (1: none)       */
    float beta_fast, beta_slow;
    int32_t n_ctx_orig;     /* the context the model was trained at   */
} tport_params_rope_ext;
typedef struct tport_params_flash_attn_ext {
    float scale;
    float softcap;          /* <= 0: none                             */
} tport_params_flash_attn_ext;

/* ---- instruction-set features (append-only bit numbers) ----------------
 * A plug-in lists what its code needs in required_isa; the host checks
 * cpuid and the OS-enabled register state before it runs anything else
 * of the plug-in. */
enum {
    TPORT_ISA_SSE42 = 1u << 0,
    TPORT_ISA_AVX = 1u << 1,
    TPORT_ISA_AVX2 = 1u << 2,
    TPORT_ISA_FMA = 1u << 3,
    TPORT_ISA_F16C = 1u << 4,
    TPORT_ISA_AVX512F = 1u << 5,
    TPORT_ISA_AVX512BW = 1u << 6,
    TPORT_ISA_AVX512VL = 1u << 7,
    TPORT_ISA_AVX512DQ = 1u << 8,
    TPORT_ISA_AVX512VNNI = 1u << 9,
    TPORT_ISA_AVX512BF16 = 1u << 10,
    TPORT_ISA_NEON = 1u << 16,
};

/* ---- device kinds (append-only) ----------------------------------------- */
enum {
    TPORT_DEVICE_CPU = 1,
    TPORT_DEVICE_GPU = 2,
    TPORT_DEVICE_ACCEL = 3,
    TPORT_DEVICE_REMOTE = 4,
};

/* ---- device memory (since 1.1) ------------------------------------------ */
typedef uint64_t tport_buffer; /* opaque, made by the plug-in; 0 = none   */
typedef uint64_t tport_ticket; /* completion value of one device; 0 = done */

/* tport_device_info.caps bits (append-only) */
enum {
    TPORT_DEVICE_CAP_DEVICE_MEMORY = 1u << 0, /* tensors live in its own buffers */
    TPORT_DEVICE_CAP_HOST_READABLE = 1u << 1, /* can read host-memory operands   */
    TPORT_DEVICE_CAP_ASYNC = 1u << 2,         /* slots may return tickets        */
    TPORT_DEVICE_CAP_IMPORT_HOST = 1u << 3,   /* import_host works               */
    /* since 1.5: the device computes products of f32 operands (MUL_MAT,
     * MUL_MAT_ID, FLASH_ATTN, FLASH_ATTN_EXT) from operands rounded to
     * f16, accumulating in f32 (ggml's Vulkan backend on devices with f16
     * arithmetic).  Only said, never required: tport check-backend then
     * judges those cases by the tolerance of f16 operands and says so. */
    TPORT_DEVICE_CAP_F16_PRODUCTS = 1u << 4,
};
/* buffer_alloc kinds (append-only) */
enum {
    TPORT_MEM_DEVICE = 1,       /* the device's own memory                   */
    TPORT_MEM_HOST_STAGING = 2, /* host-visible memory; host_ptr must be set */
};
/* buffer_alloc usage hints (append-only) */
enum {
    TPORT_USAGE_WEIGHTS = 1, /* written once at load, then only read      */
    TPORT_USAGE_COMPUTE = 2, /* activations, caches: rewritten every call */
};

/* ---- what the host tells a plug-in about a type ------------------------- */
typedef struct tport_type_info {
    uint32_t struct_size;
    tport_type_id id;
    const char *name;         /* "q4_0", "q4_0_qnt0", ...            */
    int64_t block_size;       /* elements per block (1 for F32)      */
    uint64_t block_bytes;     /* bytes per block                     */
    bool is_quantized;
    tport_type_id vec_dot_type; /* type activations are converted to for
                                  dot products with this type        */
} tport_type_info;
#define TPORT_TYPE_INFO_SIZE_1_0 TPORT_SIZE_THROUGH(tport_type_info, vec_dot_type)

/* ---- host services: what the host offers every plug-in ----------------- */
typedef struct tport_host_api {
    uint32_t struct_size;
    uint32_t abi_major;   /* the host's major                      */
    uint32_t abi_minor;   /* the newest minor the host speaks      */
    uint32_t reserved;
    /* since 1.0 */
    void (*log)(int32_t level, const char *fmt, ...);
    /* Records a message for the calling thread and returns `code`, so a
     * slot can `return host->error(code, "...")`. */
    tport_status (*error)(tport_status code, const char *fmt, ...);
    /* NULL for an id the host does not know. */
    const tport_type_info *(*type_info)(tport_type_id type);
    /* Reference conversions between any known type and f32 (n elements,
     * a multiple of the block size).  Return TPORT_STATUS_UNSUPPORTED if
     * the type has no such function. */
    tport_status (*to_float)(tport_type_id type, const void *src, float *dst, int64_t n);
    tport_status (*from_float)(tport_type_id type, const float *src, void *dst, int64_t n);
} tport_host_api;
#define TPORT_HOST_API_SIZE_1_0 TPORT_SIZE_THROUGH(tport_host_api, from_float)

/* ---- the graph view a backend computes ---------------------------------- */
#define TPORT_MAX_SRC 4
#define TPORT_MAX_DIMS 4

typedef struct tport_tensor_view {
    uint32_t struct_size;
    tport_op_id op;
    tport_type_id type;
    int32_t src[TPORT_MAX_SRC]; /* indices into tport_graph_view.tensors, -1 = none */
    int64_t ne[TPORT_MAX_DIMS];  /* elements per dimension               */
    uint64_t nb[TPORT_MAX_DIMS]; /* byte stride per dimension            */
    void *data;                  /* host address of element [0,0,0,0]    */
    const void *params;          /* op parameter block, or NULL          */
    uint32_t params_size;
    uint32_t flags;              /* TPORT_TENSOR_* bits                  */
    const char *name;            /* for messages; may be ""              */
    /* since 1.1: where the tensor lives when it is in a plug-in's buffer
     * (buffer == 0: host memory at `data`) */
    tport_buffer buffer;
    uint64_t offset;             /* bytes from the buffer's start        */
    /* since 1.3: operands 4 and 5 (indices as src, -1 = none); read only
     * when struct_size covers them, else none */
    int32_t src_more[2];
} tport_tensor_view;
#define TPORT_TENSOR_VIEW_SIZE_1_0 TPORT_SIZE_THROUGH(tport_tensor_view, name)
#define TPORT_TENSOR_VIEW_SIZE_1_1 TPORT_SIZE_THROUGH(tport_tensor_view, offset)
#define TPORT_TENSOR_VIEW_SIZE_1_3 TPORT_SIZE_THROUGH(tport_tensor_view, src_more)
enum {
    TPORT_TENSOR_INPUT = 1u << 0,  /* set by the caller before compute */
    TPORT_TENSOR_WEIGHT = 1u << 1, /* constant model data              */
    TPORT_TENSOR_OUTPUT = 1u << 2, /* read after compute               */
};

typedef struct tport_graph_view {
    uint32_t struct_size;
    int32_t n_tensors;
    const tport_tensor_view *const *tensors; /* n_tensors pointers       */
    int32_t n_nodes;
    const int32_t *nodes;  /* tensor indices to compute, in this order */
    int32_t n_threads;     /* the user's thread budget (>= 1)          */
    /* since 1.1 (see section 9 of the guide); never 0 */
    uint64_t graph_key;    /* equal for graphs of equal structure      */
    uint64_t bind_key;     /* equal for equal placement of operands    */
} tport_graph_view;
#define TPORT_GRAPH_VIEW_SIZE_1_0 TPORT_SIZE_THROUGH(tport_graph_view, n_threads)
#define TPORT_GRAPH_VIEW_SIZE_1_1 TPORT_SIZE_THROUGH(tport_graph_view, bind_key)

/* ---- devices ------------------------------------------------------------ */
typedef struct tport_device_info {
    uint32_t struct_size;  /* set by the host: how much it can receive */
    int32_t kind;          /* TPORT_DEVICE_*                            */
    char name[64];
    char description[128];
    uint64_t memory_total; /* bytes, 0 = unknown                        */
    uint64_t memory_free;
    /* since 1.1 */
    uint64_t caps;            /* TPORT_DEVICE_CAP_* bits                 */
    uint64_t mem_alignment;   /* offsets the host picks are multiples (0 = 64) */
    uint64_t max_buffer_size; /* largest buffer_alloc (0 = no limit)     */
} tport_device_info;
#define TPORT_DEVICE_INFO_SIZE_1_0 TPORT_SIZE_THROUGH(tport_device_info, memory_free)
#define TPORT_DEVICE_INFO_SIZE_1_1 TPORT_SIZE_THROUGH(tport_device_info, max_buffer_size)

/* ---- the plug-in's table ------------------------------------------------ */
typedef struct tport_backend_api {
    uint32_t struct_size;
    uint32_t abi_major;     /* must equal the host's major             */
    uint32_t abi_minor;     /* the minor the plug-in picked (<= host's)*/
    uint32_t reserved;
    /* since 1.0 */
    const char *name;       /* short, lower case: "cpu", "myaccel"      */
    const char *version;    /* the plug-in's own version, free form     */
    uint64_t required_isa;  /* TPORT_ISA_* bits the code needs          */
    /* Higher is better; 0 = cannot run here.  Called after the ISA check.
     * NULL means 1. */
    int32_t (*score)(void);
    tport_status (*init)(void **backend);
    void (*shutdown)(void *backend);
    int32_t (*device_count)(void *backend);
    tport_status (*device_info)(void *backend, int32_t device, tport_device_info *out);
    bool (*supports_op)(void *backend, int32_t device, const tport_graph_view *graph, int32_t node);
    tport_status (*compute)(void *backend, int32_t device, const tport_graph_view *graph);
    /* since 1.1: device memory and asynchronous work (guide, section 9).
     * `ticket` may be NULL (the host then needs the work done on return). */
    /* A buffer of `size` bytes of memory kind `kind` (TPORT_MEM_*) with a
     * usage hint (TPORT_USAGE_*); *host_ptr is set to a host address of its
     * first byte when the host may touch it directly (must for
     * HOST_STAGING), else NULL. */
    tport_status (*buffer_alloc)(void *backend, int32_t device, uint32_t kind, uint32_t usage, uint64_t size,
                                 tport_buffer *out, void **host_ptr);
    void (*buffer_free)(void *backend, tport_buffer buffer);
    /* Bytes `tensor` takes in your memory (0: its plain size; for a
     * host-memory backend, 0 means "do not upload it"). */
    uint64_t (*tensor_alloc_size)(void *backend, int32_t device, const tport_tensor_view *tensor);
    /* Upload: `size` bytes at src hold the tensor in its plain layout
     * (tensor->type, ne, nb); store it at (buffer, offset) in any layout. */
    tport_status (*tensor_write)(void *backend, tport_buffer buffer, uint64_t offset, const tport_tensor_view *tensor,
                                 const void *src, uint64_t size, tport_ticket *ticket);
    /* Download into dst in the plain layout; UNSUPPORTED is allowed for
     * weights you re-encoded. */
    tport_status (*tensor_read)(void *backend, tport_buffer buffer, uint64_t offset, const tport_tensor_view *tensor,
                                void *dst, uint64_t size, tport_ticket *ticket);
    tport_status (*buffer_fill)(void *backend, tport_buffer buffer, uint64_t offset, uint64_t size, uint8_t value,
                                tport_ticket *ticket);
    /* Within one device: src and dst are yours. */
    tport_status (*buffer_copy)(void *backend, tport_buffer dst, uint64_t dst_offset, tport_buffer src,
                                uint64_t src_offset, uint64_t size, tport_ticket *ticket);
    /* Wraps host memory (a mapped model file) without a copy; it stays
     * valid until buffer_free. */
    tport_status (*import_host)(void *backend, int32_t device, void *ptr, uint64_t size, tport_buffer *out);
    /* Like compute, but may return before the work is done. */
    tport_status (*compute_async)(void *backend, int32_t device, const tport_graph_view *graph,
                                  tport_ticket *ticket);
    tport_status (*wait)(void *backend, int32_t device, tport_ticket ticket, uint64_t timeout_ns);
    void (*forget_graph)(void *backend, int32_t device, uint64_t graph_key);
} tport_backend_api;
#define TPORT_BACKEND_API_SIZE_1_0 TPORT_SIZE_THROUGH(tport_backend_api, compute)
#define TPORT_BACKEND_API_SIZE_1_1 TPORT_SIZE_THROUGH(tport_backend_api, forget_graph)

/* The one symbol a plug-in exports.  Declared here, inside extern "C", so
 * that a plug-in's definition has C linkage even when compiled as C++ (a
 * mangled name would not be found) and needs no prototype of its own. */
#define TPORT_BACKEND_ENTRY_NAME "tport_backend_entry"
typedef const tport_backend_api *(*tport_backend_entry_fn)(const tport_host_api *host);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *host);

#ifdef __cplusplus
}
#endif
#endif /* TPORT_BACKEND_H */

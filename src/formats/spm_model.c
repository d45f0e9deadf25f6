/* SentencePiece's tokenizer.model: a protobuf ModelProto (sentencepiece's
 * sentencepiece_model.proto) of which the vocabulary is read -- field 1,
 * `repeated SentencePiece pieces`, each {1: string piece, 2: float score,
 * 3: Type type (NORMAL 1 when absent)}.  Everything else (trainer and
 * normalizer specs) is skipped: llama.cpp's converter writes only the
 * pieces, scores and types of a "llama" vocabulary.
 *
 * The file is hostile input: every varint, length and field stays inside
 * the bytes, piece texts are bounded, and the wire types are checked. */
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

#define SPM_MAX_PIECES (1 << 24)
#define SPM_MAX_PIECE_BYTES 4096

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

typedef struct pb {
    const uint8_t *p, *end;
} pb;

static bool pb_varint(pb *b, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
        uint8_t byte = *b->p++;
        *v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

/* Skips a field of wire type `wire`; false if it runs past the end or
 * the wire type is one a ModelProto never holds (groups). */
static bool pb_skip(pb *b, unsigned wire) {
    uint64_t n;
    switch (wire) {
    case WIRE_VARINT:
        return pb_varint(b, &n);
    case WIRE_I64:
        n = 8;
        break;
    case WIRE_I32:
        n = 4;
        break;
    case WIRE_LEN:
        if (!pb_varint(b, &n))
            return false;
        break;
    default:
        return false;
    }
    if (n > (uint64_t)(b->end - b->p))
        return false;
    b->p += n;
    return true;
}

/* A length-delimited field's bytes as a sub-reader. */
static bool pb_sub(pb *b, pb *sub) {
    uint64_t n;
    if (!pb_varint(b, &n) || n > (uint64_t)(b->end - b->p))
        return false;
    sub->p = b->p;
    sub->end = b->p + n;
    b->p += n;
    return true;
}

static bool read_piece(pb *b, spm_piece *out) {
    *out = (spm_piece){.type = 1};
    bool have_text = false;
    while (b->p < b->end) {
        uint64_t key;
        if (!pb_varint(b, &key))
            return false;
        unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
        if (field == 1 && wire == WIRE_LEN) {
            pb s;
            if (!pb_sub(b, &s) || s.end - s.p > SPM_MAX_PIECE_BYTES || memchr(s.p, 0, (size_t)(s.end - s.p)))
                return false;
            out->text = s.p;
            out->len = (uint32_t)(s.end - s.p);
            have_text = true;
        } else if (field == 2 && wire == WIRE_I32) {
            if (b->end - b->p < 4)
                return false;
            uint32_t bits = (uint32_t)b->p[0] | (uint32_t)b->p[1] << 8 | (uint32_t)b->p[2] << 16 |
                            (uint32_t)b->p[3] << 24;
            memcpy(&out->score, &bits, sizeof bits);
            b->p += 4;
        } else if (field == 3 && wire == WIRE_VARINT) {
            uint64_t t;
            if (!pb_varint(b, &t) || t < 1 || t > 6)
                return false;
            out->type = (int32_t)t;
        } else if (!pb_skip(b, wire)) {
            return false;
        }
    }
    return have_text;
}

tport_status mf_spm_parse(const uint8_t *data, size_t size, const char *path, spm_piece **out, int32_t *n_out) {
    *out = NULL;
    *n_out = 0;
    /* two passes: count, then fill (the count bounds the allocation) */
    for (int pass = 0; pass < 2; pass++) {
        pb b = {data, data + size};
        int32_t n = 0;
        while (b.p < b.end) {
            const uint8_t *at = b.p;
            uint64_t key;
            if (!pb_varint(&b, &key))
                return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: truncated field at byte %zu", path,
                                   (size_t)(at - data));
            unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
            if (field != 1) {
                if (!pb_skip(&b, wire))
                    return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: field %u at byte %zu runs past the end "
                                       "or has wire type %u", path, field, (size_t)(at - data), wire);
                continue;
            }
            pb sub;
            if (wire != WIRE_LEN || !pb_sub(&b, &sub))
                return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: piece at byte %zu is not a message inside "
                                   "the file", path, (size_t)(at - data));
            if (n == SPM_MAX_PIECES)
                return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: more than %d pieces", path, SPM_MAX_PIECES);
            spm_piece piece;
            if (!read_piece(&sub, &piece))
                return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: piece %d (byte %zu) is malformed: no text, a "
                                   "text over %d bytes or with a NUL, a type outside 1..6, or a field past its "
                                   "end", path, (int)n, (size_t)(at - data), SPM_MAX_PIECE_BYTES);
            if (pass == 1)
                (*out)[n] = piece;
            n++;
        }
        if (n == 0)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: no pieces (not a SentencePiece model)", path);
        if (pass == 0 && !(*out = calloc((size_t)n, sizeof **out)))
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        *n_out = n;
    }
    return TPORT_STATUS_OK;
}

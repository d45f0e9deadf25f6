/* tport_model_file_open: maps the file read-only, recognises the container
 * from its first bytes (never from the file name) and hands it to the
 * matching reader.  Names only find the other files of a model: a
 * folder's model, a shard's index, a split GGUF's parts. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/mf_internal.h"

const char *tport_container_name(tport_container c) {
    switch (c) {
    case TPORT_CONTAINER_GGUF: return "gguf";
    case TPORT_CONTAINER_GGML: return "ggml";
    case TPORT_CONTAINER_GGMF: return "ggmf";
    case TPORT_CONTAINER_GGJT: return "ggjt";
    case TPORT_CONTAINER_LLAMA2C: return "llama2.c";
    case TPORT_CONTAINER_SAFETENSORS: return "safetensors";
    case TPORT_CONTAINER_PYTORCH: return "pytorch";
    case TPORT_CONTAINER_ONNX: return "onnx";
    default: return "unknown";
    }
}

void mf_hparams_defaults(tport_mf_hparams *hp) {
    if (hp->n_head_kv == 0)
        hp->n_head_kv = hp->n_head;
    if (hp->n_rot == 0 && hp->n_head > 0)
        hp->n_rot = hp->n_embd / hp->n_head;
    if (!(hp->rope_freq_base > 0))
        hp->rope_freq_base = 10000.0f;
    if (!(hp->rope_freq_scale > 0))
        hp->rope_freq_scale = 1.0f;
}

void mf_vocab_init(tport_vocab *v) {
    memset(v, 0, sizeof *v);
    v->bos = v->eos = v->unk = v->pad = -1;
}

static tport_status map_file(tport_model_file *mf) {
    int fd = open(mf->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tport_error(TPORT_STATUS_IO, "%s: cannot open: %s", mf->path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tport_error(TPORT_STATUS_IO, "%s: cannot stat: %s", mf->path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return tport_error(TPORT_STATUS_IO, "%s: not a regular file", mf->path);
    }
    if (st.st_size < 8) {
        close(fd);
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset 0: file too small (%lld bytes) to be a model file",
                           mf->path, (long long)st.st_size);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return tport_error(TPORT_STATUS_IO, "%s: too large to map", mf->path);
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    if (p == MAP_FAILED) {
        close(fd);
        return tport_error(TPORT_STATUS_IO, "%s: cannot map: %s", mf->path, strerror(e));
    }
    /* kept for tport_model_file_copy */
    mf->fd = fd;
    mf->has_fd = true;
    mf->map = p;
    mf->map_size = (size_t)st.st_size;
    mf->file_size = (uint64_t)st.st_size;
    return TPORT_STATUS_OK;
}

/* Whether [p, p + n) lies in mf's own read-only mapping of the file. */
static bool in_mapping(const tport_model_file *mf, const void *p, size_t n) {
    if (!mf || !mf->map || mf->borrowed || !p)
        return false;
    uintptr_t base = (uintptr_t)mf->map, lo = (uintptr_t)p;
    return lo >= base && n <= mf->map_size && lo - base <= mf->map_size - n;
}

/* The file (mf or one of its part files) whose mapping holds [p, p + n). */
static const tport_model_file *mapping_of(const tport_model_file *mf, const void *p, size_t n) {
    if (in_mapping(mf, p, n))
        return mf;
    for (uint32_t i = 0; mf && i < mf->n_part_files; i++)
        if (in_mapping(mf->part_files[i], p, n))
            return mf->part_files[i];
    return NULL;
}

void tport_model_file_release(const tport_model_file *mf, const void *p, size_t n) {
    long page = sysconf(_SC_PAGESIZE);
    if (!mapping_of(mf, p, n) || page <= 0)
        return;
    uintptr_t lo = (uintptr_t)p;
    uintptr_t first = (lo + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
    uintptr_t end = (lo + n) / (uintptr_t)page * (uintptr_t)page;
    /* a private read-only file mapping: dropped pages come back from the file */
    if (end > first)
        (void)madvise((void *)first, end - first, MADV_DONTNEED);
}

tport_status tport_model_file_copy(const tport_model_file *mf, const void *p, void *dst, size_t n) {
    mf = mapping_of(mf, p, n);
    if (!mf || !mf->has_fd) {
        memcpy(dst, p, n);
        return TPORT_STATUS_OK;
    }
    uint8_t *d = dst;
    off_t at = (off_t)((uintptr_t)p - (uintptr_t)mf->map);
    while (n) {
        ssize_t got = pread(mf->fd, d, n, at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return tport_error(TPORT_STATUS_IO, "%s: reading %zu bytes at offset %lld: %s", mf->path, n,
                               (long long)at, got < 0 ? strerror(errno) : "the file is shorter than it was");
        d += got;
        at += got;
        n -= (size_t)got;
    }
    return TPORT_STATUS_OK;
}

static bool looks_like_safetensors(const mf_cursor *c) {
    uint64_t n = mf_le64(c->data);
    if (n < 2 || n > c->size - 8)
        return false;
    size_t i = 8;
    while (i < c->size && i < 8 + n && (c->data[i] == ' ' || c->data[i] == '\n' || c->data[i] == '\t' || c->data[i] == '\r'))
        i++;
    return i < c->size && c->data[i] == '{';
}

static tport_status dispatch(tport_model_file *mf, mf_cursor *c) {
    uint32_t magic = mf_le32(c->data);
    if (!memcmp(c->data, "GGUF", 4) || !memcmp(c->data, "FUGG", 4))
        return mf_read_gguf(mf, c);
    if (magic == 0x67676d6cu || magic == 0x67676d66u || magic == 0x67676a74u)
        return mf_read_ggml_legacy(mf, c);
    if (mf_pytorch_sniff(c))
        return mf_read_pytorch(mf, c);
    if (magic == 0x616b3432u || mf_llama2c_sniff(c))
        return mf_read_llama2c(mf, c);
    if (looks_like_safetensors(c))
        return mf_read_safetensors(mf, c);
    if (mf_st_index_sniff(c))
        return mf_read_st_index(mf, c);
    if (mf_onnx_sniff(c))
        return mf_read_onnx(mf, c);
    if (magic == 0x67676c61u)
        return mf_fail(c, 0, "this is a llama.cpp LoRA adapter ('ggla'), not a model file");
    if (magic == 0x6767736eu)
        return mf_fail(c, 0, "this is a llama.cpp session file ('ggsn'), not a model file");
    return mf_fail(c, 0, "unknown file format (magic bytes %02x %02x %02x %02x)", c->data[0], c->data[1],
                   c->data[2], c->data[3]);
}

static tport_model_file *new_model_file(const char *path) {
    tport_model_file *mf = calloc(1, sizeof *mf);
    if (!mf || !(mf->path = strdup(path))) {
        free(mf);
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    mf->quant_version = -1;
    mf_vocab_init(&mf->vocab);
    return mf;
}

static tport_status read_mapped(tport_model_file *mf, tport_status s, tport_model_file **out) {
    if (s == TPORT_STATUS_OK) {
        mf_cursor c = {.data = mf->map, .size = mf->file_size, .pos = 0, .path = mf->path};
        s = dispatch(mf, &c);
    }
    /* a split GGUF's parts are found from the part given (which may make
     * the first part the model file) */
    if (s == TPORT_STATUS_OK && mf->container == TPORT_CONTAINER_GGUF && !mf->part_only)
        s = mf_gguf_join_split(&mf);
    if (s == TPORT_STATUS_OK) {
        mf_hparams_defaults(&mf->hp);
        *out = mf;
    } else {
        tport_model_file_close(mf);
    }
    return s;
}

/* A shard opened through its index must be one the index names. */
static tport_status check_shard_listed(tport_model_file *mf, const char *shard) {
    for (uint32_t i = 0; i < mf->n_part_files; i++)
        if (!strcmp(mf->part_files[i]->path, shard))
            return TPORT_STATUS_OK;
    tport_status s = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: a safetensors shard that %s beside it does not list",
                                 shard, mf->path);
    tport_model_file_close(mf);
    return s;
}

tport_status tport_model_file_open(const char *path, tport_model_file **out) {
    *out = NULL;
    if (!path)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "model file path is NULL");
    char *resolved = NULL;
    bool shard = false;
    MF_TRY(mf_st_resolve_path(path, &resolved, &shard));
    tport_model_file *mf = new_model_file(resolved ? resolved : path);
    free(resolved);
    if (!mf)
        return TPORT_STATUS_OUT_OF_MEMORY;
    tport_status s = read_mapped(mf, map_file(mf), out);
    if (s == TPORT_STATUS_OK && shard && (*out)->container == TPORT_CONTAINER_SAFETENSORS) {
        s = check_shard_listed(*out, path);
        if (s)
            *out = NULL;
    }
    return s;
}

tport_status mf_open_part(const char *path, tport_model_file **out) {
    *out = NULL;
    tport_model_file *mf = new_model_file(path);
    if (!mf)
        return TPORT_STATUS_OUT_OF_MEMORY;
    mf->part_only = true;
    return read_mapped(mf, map_file(mf), out);
}

tport_status tport_model_file_open_memory(const void *data, size_t size, const char *name,
                                          tport_model_file **out) {
    *out = NULL;
    if (!data && size)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "model file data is NULL");
    tport_model_file *mf = new_model_file(name ? name : "(memory)");
    if (!mf)
        return TPORT_STATUS_OUT_OF_MEMORY;
    mf->map = (void *)data;
    mf->map_size = size;
    mf->file_size = size;
    mf->borrowed = true;
    tport_status s = TPORT_STATUS_OK;
    if (size < 8)
        s = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset 0: file too small (%zu bytes) to be a model file",
                        mf->path, size);
    return read_mapped(mf, s, out);
}

void tport_model_file_close(tport_model_file *mf) {
    if (!mf)
        return;
    if (mf->map && !mf->borrowed)
        munmap(mf->map, mf->map_size);
    if (mf->has_fd)
        close(mf->fd);
    mf_parts_close(mf);
    mf_free_owned(mf);
    free(mf->tensors);
    free(mf->path);
    free(mf);
}

const tport_mf_tensor *tport_model_file_find(const tport_model_file *mf, const char *name) {
    if (!mf || !name)
        return NULL;
    for (int i = 0; i < mf->n_tensors; i++)
        if (!strcmp(mf->tensors[i].name, name))
            return &mf->tensors[i];
    return NULL;
}

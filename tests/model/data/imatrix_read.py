"""Reads importance-matrix files (llama-imatrix's GGUF and legacy .dat
forms) into plain Python, for make_imatrix_refs.py and test_imatrix.py.
Test code: trusts its input (files that the test itself just wrote).

read_gguf(path) -> (keys, tensors): keys {name: value}; tensors
{name: (shape list, values list)} for the F32 tensors.
read_dat(path) -> (entries, chunks, dataset): entries {name: (ncall, values)}.
summary(tensors) -> {weight: {"counts": [...], "sums": [...], "wsums": [...]}}:
per matrix the count, the sum of its in_sum2 row and that row weighted by
column index + 1 (which a permutation of columns changes)."""
import struct

GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def _value(buf, at, vtype):
    if vtype == 8:
        (n,) = struct.unpack_from("<Q", buf, at)
        return buf[at + 8:at + 8 + n].decode("utf-8"), at + 8 + n
    if vtype == 9:
        et, n = struct.unpack_from("<IQ", buf, at)
        at += 12
        out = []
        for _ in range(n):
            v, at = _value(buf, at, et)
            out.append(v)
        return out, at
    fmt = "<" + GGUF_SCALARS[vtype]
    return struct.unpack_from(fmt, buf, at)[0], at + struct.calcsize(fmt)


def read_gguf(path):
    buf = open(path, "rb").read()
    assert buf[:4] == b"GGUF", path
    _version, n_t, n_kv = struct.unpack_from("<IQQ", buf, 4)
    at = 24
    keys = {}
    for _ in range(n_kv):
        (n,) = struct.unpack_from("<Q", buf, at)
        key = buf[at + 8:at + 8 + n].decode()
        (vtype,) = struct.unpack_from("<I", buf, at + 8 + n)
        keys[key], at = _value(buf, at + 12 + n, vtype)
    infos = []
    for _ in range(n_t):
        (n,) = struct.unpack_from("<Q", buf, at)
        name = buf[at + 8:at + 8 + n].decode()
        at += 8 + n
        (nd,) = struct.unpack_from("<I", buf, at)
        shape = list(struct.unpack_from("<%dQ" % nd, buf, at + 4))
        ttype, off = struct.unpack_from("<IQ", buf, at + 4 + 8 * nd)
        at += 4 + 8 * nd + 12
        infos.append((name, shape, ttype, off))
    align = keys.get("general.alignment", 32)
    data = (at + align - 1) // align * align
    tensors = {}
    for name, shape, ttype, off in infos:
        if ttype != 0:
            continue
        count = 1
        for d in shape:
            count *= d
        tensors[name] = (shape, list(struct.unpack_from("<%df" % count, buf, data + off)))
    return keys, tensors


def read_dat(path):
    buf = open(path, "rb").read()
    (n,) = struct.unpack_from("<i", buf, 0)
    at = 4
    entries = {}
    for _ in range(n):
        (ln,) = struct.unpack_from("<i", buf, at)
        name = buf[at + 4:at + 4 + ln].decode()
        at += 4 + ln
        ncall, nval = struct.unpack_from("<ii", buf, at)
        at += 8
        entries[name] = (ncall, list(struct.unpack_from("<%df" % nval, buf, at)))
        at += 4 * nval
    chunks, ln = struct.unpack_from("<ii", buf, at)
    dataset = buf[at + 8:at + 8 + ln].decode()
    return entries, chunks, dataset


def summary(tensors):
    out = {}
    for name, (shape, vals) in sorted(tensors.items()):
        if not name.endswith(".in_sum2"):
            continue
        w = name[:-len(".in_sum2")]
        counts = tensors[w + ".counts"][1]
        ne0 = shape[0]
        n_mat = len(vals) // ne0
        rows = [vals[i * ne0:(i + 1) * ne0] for i in range(n_mat)]
        out[w] = {
            "counts": [int(round(c)) for c in counts],
            "sums": [sum(r) for r in rows],
            "wsums": [sum((j + 1) * v for j, v in enumerate(r)) for r in rows],
            "shape": shape,
        }
    return out

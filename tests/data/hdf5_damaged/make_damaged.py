#!/usr/bin/python3
"""Writes the two damaged HDF5 files on which HDF5 1.10.8 (Debian's libhdf5) itself misbehaves, found by the adapter
fuzzer (docs/testing.md) and rebuilt here by hand so that each damage is one documented edit:

  global_heap_loop.h5  an adapter-looking file whose root attribute `format` (a variable-length string, stored in a
                       global heap collection) points into a collection whose first object claims index 0 and size 0:
                       H5HG_read -> H5HG__cache_heap_deserialize never advances and loops forever.
  dense_links_segv.h5  an ICLCA-adapter-looking file whose /adapter group keeps its 12 links in dense storage (fractal
                       heap + v2 B-tree name index) with the B-tree header's record count raised from 12 to 13 (checksum
                       recomputed): listing the group (H5Gget_objname_by_idx) sorts a table with one uninitialised entry,
                       SIGSEGV inside H5G__dense_get_name_by_idx.

iclab must refuse both with exit 2 (tests/test_hdf5_guard.cpp). Run: /usr/bin/python3 make_damaged.py (h5py, numpy)."""
import os
import struct

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def lookup3(data, initval=0):
    """Bob Jenkins' hashlittle, as HDF5's H5_checksum_lookup3 (metadata checksums)."""
    def rot(x, k):
        return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF
    length = len(data)
    a = b = c = (0xDEADBEEF + length + initval) & 0xFFFFFFFF
    i = 0
    word = lambda j: data[j] | (data[j + 1] << 8) | (data[j + 2] << 16) | (data[j + 3] << 24)
    while length > 12:
        a, b, c = (a + word(i)) & 0xFFFFFFFF, (b + word(i + 4)) & 0xFFFFFFFF, (c + word(i + 8)) & 0xFFFFFFFF
        a = (a - c) & 0xFFFFFFFF; a ^= rot(c, 4); c = (c + b) & 0xFFFFFFFF
        b = (b - a) & 0xFFFFFFFF; b ^= rot(a, 6); a = (a + c) & 0xFFFFFFFF
        c = (c - b) & 0xFFFFFFFF; c ^= rot(b, 8); b = (b + a) & 0xFFFFFFFF
        a = (a - c) & 0xFFFFFFFF; a ^= rot(c, 16); c = (c + b) & 0xFFFFFFFF
        b = (b - a) & 0xFFFFFFFF; b ^= rot(a, 19); a = (a + c) & 0xFFFFFFFF
        c = (c - b) & 0xFFFFFFFF; c ^= rot(b, 4); b = (b + a) & 0xFFFFFFFF
        length -= 12
        i += 12
    if length == 0:
        return c
    tail = bytes(data[i:i + length]) + bytes(12 - length)
    t = lambda j: tail[j] | (tail[j + 1] << 8) | (tail[j + 2] << 16) | (tail[j + 3] << 24)
    a, b, c = (a + t(0)) & 0xFFFFFFFF, (b + t(4)) & 0xFFFFFFFF, (c + t(8)) & 0xFFFFFFFF
    c ^= b; c = (c - rot(b, 14)) & 0xFFFFFFFF
    a ^= c; a = (a - rot(c, 11)) & 0xFFFFFFFF
    b ^= a; b = (b - rot(a, 25)) & 0xFFFFFFFF
    c ^= b; c = (c - rot(b, 16)) & 0xFFFFFFFF
    a ^= c; a = (a - rot(c, 4)) & 0xFFFFFFFF
    b ^= a; b = (b - rot(a, 14)) & 0xFFFFFFFF
    c ^= b; c = (c - rot(b, 24)) & 0xFFFFFFFF
    return c


def global_heap_loop(path):
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "iclab iclaa adapter"  # a variable-length UTF-8 string: its bytes live in a global heap
    data = bytearray(open(path, "rb").read())
    gcol = data.find(b"GCOL")
    assert gcol > 0 and data.find(b"GCOL", gcol + 1) < 0
    first = gcol + 16  # signature 4, version 1, reserved 3, collection size 8; then objects: index 2, refs 2, reserved 4, size 8
    struct.pack_into("<H", data, first, 0)      # heap object index 0 (the free-space object) ...
    struct.pack_into("<Q", data, first + 8, 0)  # ... of size 0: the parser's cursor never moves
    open(path, "wb").write(bytes(data))


def dense_links_segv(path):
    with h5py.File(path, "w", libver="latest") as f:
        f.attrs["format"] = "iclab adapter"
        f.attrs["format_version"] = np.int64(1)
        for name in ("model_fingerprint", "prompt_text", "source"):
            f.attrs[name] = "x"
        for name in ("model_layers", "model_heads", "feature_dim", "head_dim", "model_parameter_count"):
            f.attrs[name] = np.int64(1)
        group = f.create_group("adapter")
        for i in range(12):  # more than 8 links: dense storage
            group.create_dataset("b%02d" % i, data=np.zeros(1))
    data = bytearray(open(path, "rb").read())
    headers = [i for i in range(len(data)) if data[i:i + 4] == b"BTHD"]
    # The name index of /adapter: the v2 B-tree whose header counts 12 records (record count at byte 26, checksum at 34).
    target = [h for h in headers if struct.unpack_from("<Q", data, h + 26)[0] == 12]
    assert len(target) == 1, target
    h = target[0]
    struct.pack_into("<Q", data, h + 26, 13)
    struct.pack_into("<I", data, h + 34, lookup3(bytes(data[h:h + 34])))
    open(path, "wb").write(bytes(data))


if __name__ == "__main__":
    global_heap_loop(os.path.join(HERE, "global_heap_loop.h5"))
    dense_links_segv(os.path.join(HERE, "dense_links_segv.h5"))

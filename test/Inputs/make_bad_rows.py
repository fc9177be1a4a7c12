"""Writes the row-data files of test/Training/row-data.test into DIR: good
classifier rows (rows.npz, 12 rows of 16 tokens, labels 0/1) and one file
per defect trc-run must refuse, named after it.

    python make_bad_rows.py DIR
"""
import io
import os
import struct
import sys
import zlib

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
ids = rng.integers(1, 256, (12, 16)).astype(np.int64)
labels = (np.arange(12) % 2).astype(np.int64)


def save(name, **arrays):
    np.savez(os.path.join(out, name + ".npz"), **arrays)


save("rows", input_ids=ids, labels=labels)
save("ragged", input_ids=ids, labels=labels[:10])
save("extra", input_ids=ids, labels=labels, attention_mask=np.ones_like(ids))
save("missing", input_ids=ids)
save("dtype", input_ids=ids.astype(np.int32), labels=labels)
bad = labels.copy()
bad[7] = 2
save("badlabel", input_ids=ids, labels=bad)
bad = ids.copy()
bad[5, 3] = 256
save("badtoken", input_ids=bad, labels=labels)
save("shape", input_ids=ids[:, :, None], labels=labels)
with open(os.path.join(out, "notzip.npz"), "wb") as f:
    f.write(b"not a zip archive")

# A 1 KB deflated member that declares 4 GiB - 16 bytes (both size fields of
# its local header and of the central directory): an amplification bomb.
np.savez_compressed(os.path.join(out, "bomb.npz"), input_ids=ids, labels=labels)
with open(os.path.join(out, "bomb.npz"), "r+b") as f:
    data = bytearray(f.read())
    huge = (2**32 - 16).to_bytes(4, "little")
    at = 0
    while (at := data.find(b"PK\x03\x04", at)) >= 0:  # local headers: size at +22
        data[at + 22:at + 26] = huge
        at += 4
    at = 0
    while (at := data.find(b"PK\x01\x02", at)) >= 0:  # central directory: size at +24
        data[at + 24:at + 28] = huge
        at += 4
    f.seek(0)
    f.write(data)

# Out-of-range values (issue 33): a negative token id, int64's minimum as a
# token id, and a label of 2^40 (the classifier's labels are class ids).
bad = ids.copy()
bad[5, 3] = -1
save("negtoken", input_ids=bad, labels=labels)
bad = ids.copy()
bad[5, 3] = np.iinfo(np.int64).min
save("mintoken", input_ids=bad, labels=labels)
bad = labels.copy()
bad[7] = 2**40
save("hugelabel", input_ids=ids, labels=bad)


def npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def write_zip64(name, members):
    """Writes a zip of `members` (NAME, DATA, METHOD, DECLARED): DATA stored
    (METHOD 0) or raw-deflated (8), each declaring DECLARED uncompressed
    bytes (and, stored, as many compressed ones) through a zip64 extra field
    whose central directory fields saturate at 0xFFFFFFFF, as a writer of a
    member over 4 GiB does."""
    body, directory = bytearray(), bytearray()
    for member, data, method, declared in members:
        crc = zlib.crc32(data)
        if method == 8:
            deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
            payload = deflate.compress(data) + deflate.flush()
            sizes = (len(payload), 0xFFFFFFFF)  # compressed, uncompressed
            extra = struct.pack("<HHQ", 1, 8, declared)
        else:
            payload = data
            sizes = (0xFFFFFFFF, 0xFFFFFFFF)
            extra = struct.pack("<HHQQ", 1, 16, declared, declared)
        offset = len(body)
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, method, 0, 0x21, crc,
                            *sizes, len(member), len(extra))
        body += member.encode() + extra + payload
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, method, 0, 0x21,
                                 crc, *sizes, len(member), len(extra), 0, 0, 0, 0, offset)
        directory += member.encode() + extra
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory),
                      len(body), 0)
    with open(os.path.join(out, name + ".npz"), "wb") as f:
        f.write(bytes(body + directory + end))


# Bombs with a zip64 extra field (files of about 1 KB): a deflated member
# declaring 12 GiB, and a stored one declaring 64 GiB + 16 bytes (both of
# its sizes). Each must be refused, naming the file and member, before
# anything of that size is allocated.
write_zip64("bomb12g", [("labels.npy", npy_bytes(labels), 0, len(npy_bytes(labels))),
                        ("input_ids.npy", npy_bytes(ids), 8, 12 * 2**30)])
write_zip64("bomb64g", [("labels.npy", npy_bytes(labels), 0, len(npy_bytes(labels))),
                        ("input_ids.npy", npy_bytes(ids), 0, 2**36 + 16)])

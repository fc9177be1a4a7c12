"""Writes the row-data files of test/Training/row-data.test into DIR: good
classifier rows (rows.npz, 12 rows of 16 tokens, labels 0/1) and one file
per defect trc-run must refuse, named after it.

    python make_bad_rows.py DIR
"""
import os
import sys

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

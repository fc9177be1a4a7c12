#!/usr/bin/env python3
# safetensors_interop.py - the Python side of SafetensorsTest's interop test.
#
#   safetensors_interop.py write OUT   writes the reference tensors with the
#                                      `safetensors` package (numpy dtypes)
#   safetensors_interop.py check IN    reads a file written by trc with the
#                                      package and checks every tensor
#                                      (bf16 included) and the metadata
#
# The reference tensors are defined by formulas shared with
# SafetensorsTest.cpp (referenceTensors()): element i of a float tensor is
# i * 0.25 - 1, of an integer tensor (i * 37 + 5) wrapped to its width
# (signed types: minus 60), of a bool tensor i % 3 != 1.
import sys

import numpy as np
import safetensors
import safetensors.numpy

SHAPES = {
    "f64": ("F64", np.float64, [3]),
    "f32": ("F32", np.float32, [2, 3]),
    "f16": ("F16", np.float16, [2, 2]),
    "i64": ("I64", np.int64, [5]),
    "i32": ("I32", np.int32, [2, 2]),
    "i16": ("I16", np.int16, [3]),
    "i8": ("I8", np.int8, [4]),
    "u64": ("U64", np.uint64, [2]),
    "u32": ("U32", np.uint32, [3]),
    "u16": ("U16", np.uint16, [3]),
    "u8": ("U8", np.uint8, [1, 5]),
    "bool": ("BOOL", np.bool_, [6]),
    "empty": ("F32", np.float32, [0, 4]),
    "scalar": ("F32", np.float32, []),
}
# One key: the package writes metadata in hash order, so a byte-for-byte
# comparison needs a single key.
METADATA = {"note": 'h\u00e9llo "quoted" \\ tab\t \x08\x0c\x01 end'}


def values(dtype, shape):
    n = int(np.prod(shape)) if shape else 1
    i = np.arange(n, dtype=np.int64)
    if dtype in (np.float64, np.float32, np.float16):
        v = (i * 0.25 - 1).astype(dtype)
    elif dtype == np.bool_:
        v = i % 3 != 1
    else:
        v = i * 37 + 5
        if np.issubdtype(dtype, np.signedinteger):
            v = v - 60
        v = v.astype(dtype)
    return v.reshape(shape)


def reference():
    return {name: values(np_dtype, shape)
            for name, (_, np_dtype, shape) in SHAPES.items()}


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "write":
        safetensors.numpy.save_file(reference(), path, metadata=METADATA)
        return 0
    with open(path, "rb") as f:
        data = f.read()
    got = dict(safetensors.deserialize(data))
    ref = reference()
    # bf16: the upper halves of the f32 values i * 0.25 - 1, shape [3].
    bf = values(np.float32, [3]).view(np.uint32) >> 16
    expected = {name: (SHAPES[name][0], list(a.shape), a.tobytes())
                for name, a in ref.items()}
    expected["bf16"] = ("BF16", [3], bf.astype(np.uint16).tobytes())
    if set(got) != set(expected):
        print("names differ:", sorted(got), sorted(expected))
        return 1
    for name, (dtype, shape, raw) in expected.items():
        t = got[name]
        if (t["dtype"], list(t["shape"]), bytes(t["data"])) != (dtype, shape, raw):
            print("tensor", name, "differs:", t["dtype"], t["shape"], bytes(t["data"]))
            return 1
    with safetensors.safe_open(path, framework="numpy") as f:
        if f.metadata() != METADATA:
            print("metadata differs:", f.metadata())
            return 1
        if not np.array_equal(f.get_tensor("f32"), ref["f32"]):
            print("safe_open read different f32 values")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Hostile files for every file format trc reads (issue 33), run through the
tools that read them (test/Runtime/hostile-files.test).

    python3 hostile_files.py --trc-run TRC_RUN --trc-plan TRC_PLAN \
        --models MODELS_DIR --scratch DIR [--only FORMAT,...] [--jobs N] [-v]

First it makes one valid file of each format with the tools themselves (a
saved training step, a checkpoint) or with NumPy and the formats' own
writers (make_artifact.py's artifact, .npy/.npz, token files, JSON), and
checks that each is accepted. Then it derives hostile variants of each:
truncated at several offsets, empty, header bytes flipped, a length or size
field made huge (2^40, 2^63-1, negative), wrong magic, JSON nested 10000
deep, non-UTF-8 and NUL-laced keys, duplicate keys, numbers out of range.
Files that carry their own checksum (a checkpoint's state.json, and the
tensors' size and checksum in it) are re-signed after the mutation, so the
mutation reaches the parser (those variants also fail when the error is a
checksum mismatch). Each variant runs the command that reads it, with a
timeout of 30 s, and must:

  * exit with status exactly 1 (not a signal, not the timeout, not 0);
  * print exactly one stderr line starting with `error:`, naming the file
    (its basename, or the folder given on the command line) or the flag,
    and not showing -9223372036854775808 where the file holds no such
    number (what x86 makes of a number converted to int64 out of range);
  * leave nothing behind: no file appears in its folder (the working
    directory and TMPDIR of the run are there too) or among the fixtures;
  * leave its input unchanged (hashes before and after).

It prints one line per format, "npy: 24 hostile files, each refused with one
error naming it", and "FAIL: <format> <variant>: <why>" with the command and
its output for every variant that breaks a rule; it exits 1 if any did.

Formats (the flag that reads each):
  npy         trc-run ARTIFACT --input x=FILE.npy (make_artifact.py's good/)
  npz         trc-run gpt2cls_op17_dyn.onnx --data FILE.npz (row data)
  safetensors a checkpoint's tensors.safetensors (trc-run STEP --resume)
  checkpoint  a checkpoint's state.json and `latest` (trc-run STEP --resume)
  json        trc-run STEP' --config FILE.json (STEP' saved with a --config)
  manifest    an artifact folder's manifest.trc (trc-run FOLDER --input ...)
  bundle      a single-file artifact FILE.trc (trc-run FILE.trc --input ...)
  training    a saved step's training.trc (trc-run STEP --data ...)
  tokens      an llm.c token file (trc-run STEP --data FILE.bin)
  cluster     trc-plan --cluster FILE.json
  profile     trc-plan --device-profile FILE.json
  plan        trc-plan --plan FILE.json
STEP is a training step saved once with trc-run --save-artifact (so no
variant compiles anything); npz variants name the .onnx model, whose rows
are read before it is compiled. The variants run two at a time (--jobs),
each in its own folder; the whole run takes about 15 s on 2 cores.
"""
import argparse
import concurrent.futures
import ctypes
import ctypes.util
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 30

# Sizes of the saved step: the small GPT-2 (vocabulary 256) at batch 2 x 8.
BATCH, SEQ, VOCAB = 2, 8, 256
PLAN_MODEL = "gpt:layers=2,hidden=64,heads=4,seq=16,vocab=256"

# What an out-of-range conversion to int64 shows on x86 (undefined behaviour).
WRAPPED = "-9223372036854775808"

BIG = [("2e40", 2**40), ("2e63m1", 2**63 - 1), ("neg1", -1)]


# --------------------------------------------------------------------------
# Checksums (runtime/formats/Checksum.h): XXH3-64 from libxxhash when it can
# be loaded (trc links it), else FNV-1a 64, which the runtime also reads.
# --------------------------------------------------------------------------

def _load_xxhash():
    for name in (ctypes.util.find_library("xxhash"), "libxxhash.so.0", "libxxhash.so"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            lib.XXH3_64bits.restype = ctypes.c_uint64
            lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            return lib
        except (OSError, AttributeError):
            continue
    return None


_XXHASH = _load_xxhash()


def spelled_checksum(data):
    if _XXHASH is not None:
        return "xxh3:%016x" % _XXHASH.XXH3_64bits(bytes(data), len(data))
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "fnv1a64:%016x" % h


# --------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------

def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tree_hash(path):
    """A hash of a file, or of a folder's names and contents."""
    h = hashlib.sha256()
    if os.path.isdir(path) and not os.path.islink(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                h.update(os.path.relpath(full, path).encode() + b"\0")
                h.update(read(full) if os.path.isfile(full) else b"<special>")
            h.update(b"dirs:" + "\0".join(dirs).encode())
    elif os.path.lexists(path):
        h.update(read(path) if os.path.isfile(path) else b"<special>")
    else:
        h.update(b"<absent>")
    return h.hexdigest()


def snapshot(root):
    """Every path under `root` (folders end in /)."""
    found = set()
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirs:
            found.add(os.path.normpath(os.path.join(rel, d)) + "/")
        for f in files:
            found.add(os.path.normpath(os.path.join(rel, f)))
    return found


def truncations(data, offsets):
    """(name, bytes) for `data` cut at each offset (negative: from the end)."""
    out = []
    seen = set()
    for at in offsets:
        cut = at if at >= 0 else len(data) + at
        if 0 < cut < len(data) and cut not in seen:
            seen.add(cut)
            out.append(("trunc-%d" % cut, data[:cut]))
    return out


def flip(data, at, mask=0xFF):
    b = bytearray(data)
    b[at] ^= mask
    return bytes(b)


def nested_json(depth=10000, kind="array"):
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


# --------------------------------------------------------------------------
# .npy
# --------------------------------------------------------------------------

def npy_bytes(header, data, version=(1, 0), magic=b"\x93NUMPY", header_len=None):
    """A .npy file with header text `header` (padded as numpy pads it)."""
    if isinstance(header, str):
        header = header.encode("latin-1")
    len_bytes = 2 if version[0] == 1 else 4
    total = len(magic) + 2 + len_bytes + len(header) + 1
    header = header + b" " * (-total % 64) + b"\n"
    n = len(header) if header_len is None else header_len
    field = struct.pack("<H", n & 0xFFFF) if len_bytes == 2 else struct.pack("<I", n & 0xFFFFFFFF)
    return magic + bytes(version) + field + header + data


def npy_of(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def npy_variants(valid, data):
    """Hostile variants of a .npy file of f32 [4, 3] (its raw data `data`)."""
    good = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }"
    start = valid.index(b"\n") + 1  # the data's first byte
    v = [("empty", b"")]
    v += truncations(valid, [3, 7, 9, 40, start - 1, start + 5, -1])
    v += [
        ("magic", b"\x93NUMPZ" + valid[6:]),
        ("version-9", valid[:6] + b"\x09\x00" + valid[8:]),
        ("hlen-v1-ffff", npy_bytes(good, data, header_len=0xFFFF)),
        ("hlen-v2-2e32m1", npy_bytes(good, data, version=(2, 0), header_len=0xFFFFFFFF)),
        ("hlen-v3-2e31", npy_bytes(good, data, version=(3, 0), header_len=2**31)),
        ("hlen-zero", npy_bytes(good, data, header_len=0)),
        ("flip-brace", flip(valid, 10, 0x20)),  # '{' -> '['
        ("flip-descr", valid.replace(b"'<f4'", b"'<g4'")),
        ("dtype-object", npy_bytes(good.replace("<f4", "|O"), data)),
        ("dtype-f4-word", npy_bytes(good.replace("'<f4'", "float32"), data)),
        ("shape-2e40", npy_bytes(good.replace("(4, 3)", "(%d, 3)" % 2**40), data)),
        ("shape-2e63m1", npy_bytes(good.replace("(4, 3)", "(%d, 3)" % (2**63 - 1)), data)),
        ("shape-2e64", npy_bytes(good.replace("(4, 3)", "(%d, 3)" % 2**64), data)),
        ("shape-neg", npy_bytes(good.replace("(4, 3)", "(-4, -3)"), data)),
        ("shape-overflow", npy_bytes(good.replace("(4, 3)", "(%d, %d, 16)" % (2**32, 2**32)), data)),
        ("shape-nested", npy_bytes(good.replace("(4, 3)", "(" * 10000 + ")" * 10000), data)),
        ("dup-key", npy_bytes(good.replace("{", "{'shape': (3, 4), ", 1), data)),
        ("nul-key", npy_bytes(good.replace("'descr'", "'des\0cr'"), data)),
        ("non-utf8", npy_bytes(good.replace("'<f4'", "'<f\xff4'"), data)),
        ("fortran-nonbool", npy_bytes(good.replace("False", "2"), data)),
        # Valid .npy files trc does not read (it must not misread them).
        ("fortran-order", npy_bytes(good.replace("False", "True"), data)),
        ("big-endian", npy_bytes(good.replace("<f4", ">f4"), data)),
    ]
    return v


# --------------------------------------------------------------------------
# .npz: a zip writer that can lie in every field
# --------------------------------------------------------------------------

def zip_bytes(members, eocd=None, data_flip=None):
    """A zip archive of `members` (dicts: name, data, and optional overrides
    method, crc, csize, usize, offset, zip64 = (usize, csize), local_name,
    local_magic). `eocd` overrides fields of the end record (count, cd_size,
    cd_offset, magic)."""
    out = bytearray()
    central = bytearray()
    for m in members:
        name, data = m["name"], m["data"]
        method = m.get("method", 0)
        crc = m.get("crc", zlib.crc32(data) & 0xFFFFFFFF)
        csize = m.get("csize", len(data))
        usize = m.get("usize", len(data) if method == 0 else m.get("raw_size", len(data)))
        extra = b""
        if "zip64" in m:
            extra = struct.pack("<HHQQ", 1, 16, *m["zip64"])
            usize = csize = 0xFFFFFFFF
        local_name = m.get("local_name", name)
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", m.get("local_magic", 0x04034B50),
                           45 if extra else 20, 0, method, 0, 0x21, crc,
                           csize & 0xFFFFFFFF, usize & 0xFFFFFFFF, len(local_name), len(extra))
        out += local_name + extra + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 45 if extra else 20, 0,
                               method, 0, 0x21, crc, csize & 0xFFFFFFFF, usize & 0xFFFFFFFF,
                               len(name), len(extra), 0, 0, 0, 0,
                               m.get("offset", offset) & 0xFFFFFFFF)
        central += name + extra
    cd_offset = len(out)
    out += central
    e = dict(magic=0x06054B50, count=len(members), cd_size=len(central), cd_offset=cd_offset)
    e.update(eocd or {})
    out += struct.pack("<IHHHHIIH", e["magic"], 0, 0, e["count"] & 0xFFFF,
                       e["count"] & 0xFFFF, e["cd_size"] & 0xFFFFFFFF,
                       e["cd_offset"] & 0xFFFFFFFF, 0)
    if data_flip is not None:
        out[data_flip] ^= 0xFF
    return bytes(out)


def npz_variants(ids, labels, valid):
    ids_npy, lab_npy = npy_of(ids), npy_of(labels)

    def members(**over):
        first = dict(name=b"input_ids.npy", data=ids_npy)
        first.update(over)
        return [first, dict(name=b"labels.npy", data=lab_npy)]

    crafted = zip_bytes(members())
    first_data = 30 + len(b"input_ids.npy")  # the first member's first byte
    huge_ids = npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (%d, 16), }" % 2**40,
                         ids.tobytes())
    nested_ids = npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': %s, }"
                           % ("(" * 10000 + ")" * 10000), ids.tobytes())
    garbage = bytes(range(256)) * 4
    v = [("empty", b"")]
    v += truncations(valid, [2, 30, len(valid) // 2, -10, -1])
    v += [
        ("local-magic", zip_bytes(members(local_magic=0x08074B50))),
        ("eocd-magic", flip(crafted, len(crafted) - 22)),
        ("cd-offset-huge", zip_bytes(members(), eocd=dict(cd_offset=0xFFFFFFF0))),
        ("cd-size-huge", zip_bytes(members(), eocd=dict(cd_size=0xFFFFFFF0))),
        ("count-ffff", zip_bytes(members(), eocd=dict(count=0xFFFF))),
        ("usize-2e32m2", zip_bytes(members(usize=0xFFFFFFFE))),
        ("zip64-2e40", zip_bytes(members(zip64=(2**40, 2**40)))),
        ("zip64-2e63m1", zip_bytes(members(zip64=(2**63 - 1, 2**63 - 1)))),
        ("zip64-2e64m1", zip_bytes(members(zip64=(2**64 - 1, 2**64 - 1)))),
        ("offset-huge", zip_bytes(members(offset=0xFFFFFFF0))),
        ("crc", zip_bytes(members(crc=0xDEADBEEF))),
        ("data-flip", zip_bytes(members(), data_flip=first_data + 40)),
        ("name-nul", zip_bytes(members(name=b"input_ids\0.npy", local_name=b"input_ids\0.npy"))),
        ("name-non-utf8", zip_bytes(members(name=b"input_\xffids.npy",
                                            local_name=b"input_\xffids.npy"))),
        ("name-mismatch", zip_bytes(members(local_name=b"labels.npy"))),
        ("dup-member", zip_bytes(members() + [dict(name=b"input_ids.npy", data=ids_npy)])),
        ("inner-shape-2e40", zip_bytes(members(data=huge_ids))),
        ("inner-nested", zip_bytes(members(data=nested_ids))),
        ("deflate-garbage", zip_bytes(members(method=8, data=garbage, raw_size=len(ids_npy),
                                              crc=zlib.crc32(ids_npy) & 0xFFFFFFFF))),
        ("method-99", zip_bytes(members(method=99))),
    ]
    return crafted, v


# --------------------------------------------------------------------------
# safetensors and a checkpoint's state.json
# --------------------------------------------------------------------------

CHECKSUM_LINE = '\n  "checksum": "'


def state_body(text):
    """state.json up to (and with) the newline before its checksum line."""
    at = text.rindex(CHECKSUM_LINE)
    return text[: at + 1]


def sign_state(body):
    """`body` (bytes) with a checksum line over it, as saveCheckpoint writes."""
    return body + ('  "checksum": "%s"\n}\n' % spelled_checksum(body)).encode()


def with_tensors(body, tensors):
    """state.json's body recording the size and checksum of `tensors`."""
    text = body.decode("latin-1")
    text, n = re.subn(r'("tensors": \{"file": "tensors\.safetensors", "bytes": )\d+'
                      r'(, "checksum": ")[a-z0-9]+:[0-9a-f]{16}"',
                      lambda m: m.group(1) + str(len(tensors)) + m.group(2)
                      + spelled_checksum(tensors) + '"', text)
    if n != 1:
        raise SystemExit("error: hostile_files.py: no tensors record in state.json")
    return text.encode("latin-1")


def st_split(data):
    n = struct.unpack("<Q", data[:8])[0]
    return data[8:8 + n], data[8 + n:]


def st_join(header, payload, length=None):
    if isinstance(header, str):
        header = header.encode("latin-1")
    header += b" " * (-len(header) % 8)
    n = len(header) if length is None else length
    return struct.pack("<Q", n & 0xFFFFFFFFFFFFFFFF) + header + payload


def safetensors_variants(valid):
    header, payload = st_split(valid)
    meta = json.loads(header)
    names = [k for k in meta if k != "__metadata__"]
    first = names[0]
    entry = meta[first]

    def with_entry(**change):
        e = dict(entry)
        e.update(change)
        m = dict(meta)
        m[first] = e
        return st_join(json.dumps(m), payload)

    def renamed(new_name):
        text = header.rstrip(b" ")
        return st_join(text.replace(json.dumps(first).encode(), new_name, 1), payload)

    text = header.rstrip(b" ").decode("latin-1")
    key = json.dumps(first)
    dup = text.replace(key + ":", key + ": " + json.dumps(entry) + ", " + key + ":", 1)
    v = [("empty", b"")]
    v += truncations(valid, [4, 8, 8 + len(header) // 2, 8 + len(header) + 3, -1])
    v += [("hlen-" + n, st_join(header, payload, length=val)) for n, val in BIG]
    v += [
        ("hlen-zero", st_join(b"", header + payload)),
        ("flip-brace", flip(valid, 8, 0x20)),  # '{' -> '['
        ("nested", st_join('{"__metadata__": ' + nested_json() + "," + text[1:], payload)),
        ("dup-key", st_join(dup, payload)),
        ("nul-key", renamed(b'"' + first.encode()[:3] + b"\0" + first.encode()[3:] + b'"')),
        ("non-utf8-key", renamed(b'"' + first.encode() + b'\xff"')),
        ("offsets-2e63m1", with_entry(data_offsets=[0, 2**63 - 1])),
        ("offsets-2e64", with_entry(data_offsets=[2**64, 2**64 + 4])),
        ("offsets-neg", with_entry(data_offsets=[-4, 4])),
        ("offsets-reversed", with_entry(data_offsets=entry["data_offsets"][::-1])),
        ("shape-2e40", with_entry(shape=[2**40, 2**40])),
        ("shape-neg", with_entry(shape=[-1] + entry["shape"][1:])),
        ("dtype", with_entry(dtype="F128")),
    ]
    return v


def state_variants(valid):
    """Hostile state.json files; (name, bytes, resigned)."""
    body = state_body(valid.decode("latin-1")).encode("latin-1")

    def sub(old, new, count=1):
        if old not in body:
            raise SystemExit("error: hostile_files.py: %r not in state.json" % old)
        return sign_state(body.replace(old, new, count))

    step = re.search(rb'"step": \d+', body).group(0)
    config = re.search(rb'"config": \{', body).group(0)
    position = re.search(rb'"position": \d+', body).group(0)
    rng = re.search(rb'"state": \[[0-9, ]*\]', body).group(0)
    v = [("empty", b"", False)]
    v += [(n, d, False) for n, d in truncations(valid, [1, len(valid) // 2, -3])]
    v += [
        ("flip", flip(valid, len(valid) // 3, 0x01), False),
        ("magic", sub(b'"trc-checkpoint"', b'"trc-checkpoinu"'), True),
        ("version-99", sub(b'"format_version": 3', b'"format_version": 99'), True),
        ("step-2e64", sub(step, b'"step": 18446744073709551616'), True),
        ("step-neg", sub(step, b'"step": -1'), True),
        ("step-other", sub(step, b'"step": 7'), True),
        ("position-2e40", sub(position, b'"position": %d' % 2**40), True),
        ("position-neg", sub(position, b'"position": -16'), True),
        ("rng-2e64", sub(rng, b'"state": [18446744073709551616]'), True),
        ("tensor-bytes-2e63m1", sign_state(re.sub(rb'"bytes": \d+', b'"bytes": %d' % (2**63 - 1),
                                                  body, count=1)), True),
        ("nested", sub(config, config + b'"deep": ' + nested_json().encode() + b", "), True),
        ("dup-key", sub(step, step + b", " + step), True),
        ("nul-key", sub(config, config + b'"a\0b": "x", '), True),
        ("escaped-nul-key", sub(b'"batch_size":', b'"batch\\u0000size":'), True),
        ("non-utf8-key", sub(config, config + b'"a\xffb": "x", '), True),
        ("number-1e999", sub(step, step + b', "bogus": 1e999'), True),
        ("tensors-file", sub(b'"file": "tensors.safetensors"', b'"file": "../../tensors.safetensors"'),
         True),
        ("huge", sub(config, config + b'"pad": "' + b"x" * (17 << 20) + b'", '), True),
    ]
    return v


# --------------------------------------------------------------------------
# Bundles (docs/ARTIFACT.md, "Single-file artifacts")
# --------------------------------------------------------------------------

def bundle_bytes(files, header=None, sizes=None, names=None, version=1, trailer=b""):
    names = names or [n for n, _ in files]
    sizes = sizes or [len(d) for _, d in files]
    text = header
    if text is None:
        text = "trc-bundle %d\n" % version
        text += "".join("%s %s\n" % (n, s) for n, s in zip(names, sizes))
        text += "end\n"
    if isinstance(text, str):
        text = text.encode("latin-1")
    return text + b"".join(d for _, d in files) + trailer


def bundle_variants(folder):
    files = [(n, read(os.path.join(folder, n)))
             for n in ("manifest.trc", "program.so", "weights.bin")]
    valid = bundle_bytes(files)
    head = valid.index(b"\nend\n") + 5
    m, p, w = (len(d) for _, d in files)
    cut_manifest = files[0][1][: files[0][1].rindex(b"slot 5")]
    flipped_program = bytearray(files[1][1])
    flipped_program[len(flipped_program) // 2] ^= 0xFF
    v = [("empty", b"")]
    v += truncations(valid, [5, 13, head - 2, head + 40, -1])
    v += [
        ("magic", b"trc-bundle 3" + valid[12:]),
        ("flip-header", flip(valid, 15, 0x20)),
        ("size-2e40", bundle_bytes(files, sizes=[m, 2**40, w])),
        ("size-2e63m1", bundle_bytes(files, sizes=[m, p, 2**63 - 1])),
        ("size-neg", bundle_bytes(files, sizes=[-1, p, w])),
        ("size-2e64", bundle_bytes(files, sizes=[2**64, p, w])),
        ("sizes-shifted", bundle_bytes(files, sizes=[m + 8, p - 8, w])),
        ("dup-member", bundle_bytes(files, names=["manifest.trc", "manifest.trc", "weights.bin"])),
        ("traversal", bundle_bytes(files + [("x", b"evil")], version=2,
                                   names=["manifest.trc", "program.so", "weights.bin",
                                          "../../escaped"])),
        ("nul-name", bundle_bytes(files, names=["manifest.trc", "program.so\0x", "weights.bin"])),
        ("no-end", b"trc-bundle 1\n" + b"manifest.trc 1\n" * 400 + valid[13:]),
        ("trailing", bundle_bytes(files, trailer=b"extra")),
        ("inner-manifest-cut", bundle_bytes([("manifest.trc", cut_manifest)] + files[1:])),
        ("inner-program-flip", bundle_bytes([files[0], ("program.so", bytes(flipped_program)),
                                             files[2]])),
    ]
    return valid, v


# --------------------------------------------------------------------------
# manifest.trc (docs/ARTIFACT.md). It carries the checksums of program.so and
# weights.bin, not its own; the program's signature is checked against it.
# --------------------------------------------------------------------------

def manifest_variants(text):
    lines = text.split(b"\n")

    def replace_line(prefix, new):
        out = [new if l.startswith(prefix) else l for l in lines]
        if out == lines:
            raise SystemExit("error: hostile_files.py: no %r record in the manifest" % prefix)
        return b"\n".join(out)

    def add_after(prefix, extra):
        out = []
        for l in lines:
            out.append(l)
            if l.startswith(prefix):
                out.append(extra)
        return b"\n".join(out)

    program = next(l for l in lines if l.startswith(b"program "))
    fields = program.split(b" ")
    v = [("empty", b"")]
    v += truncations(text, [5, 14, len(text) // 2, text.rindex(b"end") - 1, text.rindex(b"end") + 1])
    v += [
        ("magic", b"trc-artefact 1" + text[len(b"trc-artifact 1"):]),
        ("version-2", text.replace(b"trc-artifact 1", b"trc-artifact 2", 1)),
        ("flip", flip(text, 3, 0x20)),
        ("arena-2e40", replace_line(b"arena ", b"arena %d" % 2**40)),
        ("arena-2e63m1", replace_line(b"arena ", b"arena %d" % (2**63 - 1))),
        ("arena-neg", replace_line(b"arena ", b"arena -64")),
        ("program-bytes-2e63m1", replace_line(b"program ", b" ".join(
            fields[:2] + [b"%d" % (2**63 - 1)] + fields[3:]))),
        ("program-bytes-2e64", replace_line(b"program ", b" ".join(
            fields[:2] + [b"%d" % 2**64] + fields[3:]))),
        ("dim-2e40", replace_line(b"slot 0 ", b"slot 0 input x f32 2 %d 3" % 2**40)),
        ("dim-neg", replace_line(b"slot 0 ", b"slot 0 input x f32 2 -4 3")),
        ("dims-overflow", replace_line(b"slot 0 ", b"slot 0 input x f32 3 %d %d 16"
                                       % (2**32, 2**32))),
        ("rank-2e40", replace_line(b"slot 0 ", b"slot 0 input x f32 %d 4 3" % 2**40)),
        ("offset-2e63m1", replace_line(b"slot 1 ", b"slot 1 param W f32 2 3 2 %d trainable"
                                       % (2**63 - 1))),
        ("index-2e64", replace_line(b"slot 0 ", b"slot %d input x f32 2 4 3" % 2**64)),
        ("name-nul", replace_line(b"slot 0 ", b"slot 0 input x\0y f32 2 4 3")),
        ("name-pct-nul", replace_line(b"slot 0 ", b"slot 0 input x%00y f32 2 4 3")),
        ("name-non-utf8", replace_line(b"slot 0 ", b"slot 0 input x\xff f32 2 4 3")),
        ("dup-slot", add_after(b"slot 0 ", b"slot 0 input x f32 2 4 3")),
        ("dup-name", add_after(b"slot 5 ", b"slot 6 input x f32 2 4 3")),
        ("dup-target", add_after(b"target ", b"target cpu")),
        ("long-record", add_after(b"entry ", b"x" * (1 << 20))),
        ("many-fields", add_after(b"entry ", b"bound " + b"1 " * 10000 + b"1")),
    ]
    return v


# --------------------------------------------------------------------------
# llm.c token files
# --------------------------------------------------------------------------

def token_file(tokens, magic=20240520, version=1, count=None, header_bytes=1024):
    header = np.zeros(256, dtype=np.int32)
    header[0], header[1] = magic, version
    header[2] = len(tokens) if count is None else count
    return header.tobytes()[:header_bytes] + np.asarray(tokens, dtype=np.uint16).tobytes()


def token_variants(tokens):
    """A file without the magic is text (each byte a token; README): a
    "wrong magic" token file is valid text data, so it is not among them."""
    big = list(tokens)
    big[5] = 60000
    top = list(tokens)
    top[0] = 0xFFFF
    v = [
        ("empty", b""),
        ("magic-only", struct.pack("<i", 20240520)),
        ("header-cut", token_file(tokens)[:1023]),
        ("header-only", token_file([], count=len(tokens))),
        ("version-2", token_file(tokens, version=2)),
        ("version-neg", token_file(tokens, version=-1)),
        ("count-zero", token_file(tokens, count=0)),
        ("count-neg", token_file(tokens, count=-1)),
        ("count-2e31m1", token_file(tokens, count=2**31 - 1)),
        ("count-plus1", token_file(tokens, count=len(tokens) + 1)),
        ("odd-byte", token_file(tokens) + b"\x01"),
        ("token-60000", token_file(big)),
        ("token-65535", token_file(top)),
        ("too-few", token_file(tokens[:BATCH * SEQ])),
    ]
    return v


# --------------------------------------------------------------------------
# training.trc (runtime/train/TrainingArtifact.h)
# --------------------------------------------------------------------------

def training_variants(text):
    def sub(old, new):
        if old not in text:
            raise SystemExit("error: hostile_files.py: %r not in training.trc" % old)
        return text.replace(old, new, 1)

    batch = re.search(rb"(?m)^batch \d+$", text).group(0)
    seq = re.search(rb"(?m)^seq \d+$", text).group(0)
    v = [("empty", b"")]
    v += truncations(text, [5, len(text) // 2])
    v += [
        ("magic", sub(b"trc-training 1", b"trc-training 2")),
        ("batch-4", sub(batch, b"batch 4")),
        # The same lie, with --batch-size 4 given to match it: the program
        # was compiled for batch 2 (its manifest's slots say so).
        ("batch-4-flags", sub(batch, b"batch 4")),
        ("batch-2e63", sub(batch, b"batch %d" % 2**63)),
        ("batch-neg", sub(batch, b"batch -2")),
        ("seq-2e40", sub(seq, b"seq %d" % 2**40)),
        ("dup-batch", sub(batch, batch + b"\nbatch 3")),
        ("nul-key", sub(batch, batch + b"\nba\0tch 2")),
        ("non-utf8-input", re.sub(rb"(?m)^inputs .*$", b"inputs input\xff_ids", text, count=1)),
        ("grad-accum-2e40", text + b"grad_accum %d\n" % 2**40),
        ("ranks-2e40", text + b"ranks %d\n" % 2**40),
    ]
    return v


# --------------------------------------------------------------------------
# JSON documents (--config, trc-plan's files)
# --------------------------------------------------------------------------

def json_variants(valid, key, number_keys):
    """Hostile variants of the JSON object `valid` (a dict); `key` is one of
    its keys; `number_keys` (name, value) pairs of numbers out of range."""
    text = json.dumps(valid)
    inner = text[1:-1]
    sep = ", " if inner else ""

    def with_member(member):
        return ("{" + member + sep + inner + "}").encode("latin-1")

    v = [
        ("empty", b""),
        ("blank", b"  \n"),
        ("flip", flip(text.encode(), 0, 0x20)),  # '{' -> '['
        ("top-array", ("[" + text + "]").encode()),
        ("bom", b"\xef\xbb\xbf" + text.encode()),
        ("trailing", (text + " x").encode()),
        ("nested-array", with_member('"%s": %s' % (key, nested_json()))),
        ("nested-object", with_member('"%s": %s' % (key, nested_json(kind="object")))),
        ("dup-key", with_member('"%s": %s' % (key, json.dumps(valid[key])) if key in valid
                                else '"%s": 1, "%s": 1' % (key, key))),
        ("nul-key", with_member('"%s\0x": 1' % key)),
        ("escaped-nul-key", with_member('"%s\\u0000x": 1' % key)),
        ("non-utf8-key", with_member('"%s\xff": 1' % key)),
        ("lone-surrogate", with_member('"%s\\ud800": 1' % key)),
        ("comment", ("/* c */" + text).encode()),
    ]
    v += truncations(text.encode(), [1, len(text) // 2, -1])
    for name, value in number_keys:
        doc = dict(valid)
        doc[name] = None
        v.append(("%s-%s" % (name, value.replace("-", "neg").replace("+", "")),
                  json.dumps(doc).replace("null", value).encode()))
    return v


def device_profile():
    return {
        "trc_device_profile": 1, "device": "cpu", "source": "hostile_files.py",
        "memory_gb": 16, "cores": 2, "element_bytes": 4,
        "measured": [{"ranks": 1, "threads": 2,
                      "matmul": {"gflops": 100.0, "gbs": 50.0, "call_us": 0},
                      "kernels": {"probe": "stream", "gbs": 15.0, "op_us": 1.0,
                                  "stream_gbs": 50.0},
                      "collectives": {}}],
    }


def profile_variants():
    valid = device_profile()
    v = json_variants(valid, "device", [("trc_device_profile", "9223372036854775808"),
                                        ("memory_gb", "1e999"), ("memory_gb", "-16"),
                                        ("cores", "1099511627776")])

    def entry(**change):
        doc = json.loads(json.dumps(valid))
        e = doc["measured"][0]
        for k, val in change.items():
            section, _, field = k.partition("__")
            if field:
                e[section][field] = val
            else:
                e[section] = val
        return json.dumps(doc).encode()

    v += [
        ("ranks-2e40", entry(ranks=2**40)),
        ("ranks-neg", entry(ranks=-1)),
        ("threads-2e63", entry(threads=2**63)),
        ("gflops-neg", entry(matmul__gflops=-100.0)),
        ("gflops-zero", entry(matmul__gflops=0)),
        ("gbs-1e308x", entry(matmul__gbs=1e308).replace(b"1e+308", b"1e309")),
        ("collective-ranks-2e63m1", entry(collectives={"all_reduce": [
            {"ranks": 2**63 - 1, "latency_us": 1.0, "gbs": 1.0}]})),
        ("samples-nested", entry(samples={"deep": None}).replace(
            b'"deep": null', b'"deep": ' + nested_json(9000).encode())),
    ]
    return valid, v


def cluster_variants(fifo):
    valid = {"device": "h200", "nodes": 1, "gpus_per_node": 4, "inter_node_bandwidth_gbs": 50}
    v = json_variants(valid, "device", [("nodes", "1099511627776"),
                                        ("nodes", "9223372036854775807"),
                                        ("nodes", "-1"), ("gpus_per_node", "18446744073709551616"),
                                        ("inter_node_bandwidth_gbs", "1e999"),
                                        ("inter_node_bandwidth_gbs", "-50"),
                                        ("memory_gb", "-1")])
    for name, path in (("profile-dev-zero", "/dev/zero"), ("profile-fifo", fifo),
                       ("profile-missing", "absent-profile.json"),
                       ("profile-self", "SELF")):
        doc = dict(valid)
        doc["device"] = "cpu"
        doc["device_profile"] = path
        v.append((name, json.dumps(doc).encode()))
    return valid, v


def plan_variants():
    valid = {"pipeline_parallel_degree": 1}
    v = json_variants(valid, "pipeline_parallel_degree",
                      [("pipeline_parallel_degree", "9223372036854775808"),
                       ("microbatches", "1099511627776"), ("microbatches", "-4"),
                       ("memory_weight", "1e999")])
    return valid, v


CONFIG = {"ddp": True}


def config_variants():
    valid = CONFIG
    v = json_variants(valid, "ddp", [("bucket_cap_mb", "1e999"), ("bucket_cap_mb", "-25"),
                                     ("zero_stage", "99999999999999999999"),
                                     ("zero_stage", "1.5"),
                                     ("tensor_parallel_degree", "9223372036854775807"),
                                     ("sharded_data_parallel_degree", "-1099511627776"),
                                     ("microbatches", "1e308")])
    return valid, v


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

class Variant:
    def __init__(self, fmt, name, folder, cmd, hostile, names, watch=(), reach_parser=False):
        self.fmt, self.name = fmt, name
        self.folder = folder        # the variant's own folder (cwd and TMPDIR in it)
        self.cmd = cmd
        self.hostile = hostile      # the hostile file (or the folder holding it)
        self.names = names          # what the error line must name (one of)
        self.watch = list(watch)    # shared inputs that must stay unchanged
        self.reach_parser = reach_parser  # re-signed: a checksum mismatch is a failure


def run_command(cmd, cwd, tmpdir):
    env = dict(os.environ)
    env["TMPDIR"] = tmpdir
    # One thread each: the variants run side by side on few cores.
    env.setdefault("OMP_NUM_THREADS", "1")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return proc.returncode, timed_out, out, err, time.monotonic() - start


def check(variant):
    """Runs `variant`; returns (None or the reason it failed, its report)."""
    cwd = os.path.join(variant.folder, "cwd")
    tmp = os.path.join(variant.folder, "tmp")
    os.makedirs(cwd, exist_ok=True)
    os.makedirs(tmp, exist_ok=True)
    before_files = snapshot(variant.folder)
    before = {p: tree_hash(p) for p in [variant.hostile] + variant.watch}
    code, timed_out, out, err, seconds = run_command(variant.cmd, cwd, tmp)
    errtext = err.decode("utf-8", "replace")
    outtext = out.decode("utf-8", "replace")
    problems = []
    if timed_out:
        problems.append("no exit within %d s (killed)" % TIMEOUT_S)
    elif code < 0:
        problems.append("killed by signal %d (%s)" % (-code, signal.Signals(-code).name))
    elif code != 1:
        problems.append("exit status %d, not 1" % code)
    errors = [l for l in errtext.splitlines() if l.startswith("error:")]
    if len(errors) != 1:
        problems.append("%d stderr lines start with 'error:', not 1" % len(errors))
    elif not any(n in errors[0] for n in variant.names):
        problems.append("the error names none of %s" % ", ".join(variant.names))
    elif variant.reach_parser and "checksum mismatch" in errors[0]:
        problems.append("the re-signed file was refused by its checksum")
    elif (WRAPPED in errors[0].replace(variant.hostile, "") and os.path.isfile(variant.hostile)
          and WRAPPED.encode() not in read(variant.hostile)):
        problems.append("the error shows %s, which the file does not hold (a number "
                        "converted out of range)" % WRAPPED)
    left = sorted(snapshot(variant.folder) - before_files)
    if left:
        problems.append("left behind: %s" % ", ".join(left[:5]))
    gone = sorted(before_files - snapshot(variant.folder))
    if gone:
        problems.append("removed: %s" % ", ".join(gone[:5]))
    for path, digest in before.items():
        if tree_hash(path) != digest:
            problems.append("changed: %s" % path)
    report = "%s (%.2f s)\n  $ %s\n  exit %s\n%s%s" % (
        "; ".join(problems), seconds, " ".join(shlex.quote(c) for c in variant.cmd), code,
        "".join("  stderr| %s\n" % l for l in errtext.splitlines()[-8:]),
        "".join("  stdout| %s\n" % l for l in outtext.splitlines()[-4:]))
    return (report if problems else None), seconds, (errors[0] if errors else "")


class Suite:
    def __init__(self, args):
        self.args = args
        self.scratch = os.path.abspath(args.scratch)
        self.fixtures = os.path.join(self.scratch, "fixtures")
        self.runs = os.path.join(self.scratch, "runs")
        self.trc_run = os.path.abspath(shutil.which(args.trc_run) or args.trc_run)
        self.trc_plan = os.path.abspath(shutil.which(args.trc_plan) or args.trc_plan)
        self.models = os.path.abspath(args.models)
        self.variants = []
        self.failures = []
        self.only = set(args.only.split(",")) if args.only else None

    def wanted(self, fmt):
        return self.only is None or fmt in self.only

    def fixture(self, *parts):
        return os.path.join(self.fixtures, *parts)

    def tool(self, cmd, what, ok=True):
        """Runs a setup command; a failure stops the suite (nothing is valid)."""
        code, timed_out, out, err, seconds = run_command(cmd, self.fixtures, self.fixture("tmp"))
        if self.args.verbose:
            print("setup %s: %.2f s" % (what, seconds), file=sys.stderr)
        if (code == 0) != ok or timed_out:
            self.failures.append("FAIL: setup %s: exit %s\n  $ %s\n%s" % (
                what, code, " ".join(shlex.quote(c) for c in cmd),
                err.decode("utf-8", "replace")))
            return False
        return True

    def baseline(self, fmt, cmd, what):
        """The valid file must be accepted, else the hostile runs prove nothing."""
        folder = os.path.join(self.runs, fmt, "baseline-" + what)
        os.makedirs(os.path.join(folder, "cwd"), exist_ok=True)
        os.makedirs(os.path.join(folder, "tmp"), exist_ok=True)
        code, timed_out, out, err, seconds = run_command(cmd, os.path.join(folder, "cwd"),
                                                         os.path.join(folder, "tmp"))
        if self.args.verbose:
            print("baseline %s %s: %.2f s" % (fmt, what, seconds), file=sys.stderr)
        if code != 0:
            self.failures.append("FAIL: %s baseline %s: the valid file was refused (exit %s)\n"
                                 "  $ %s\n%s" % (fmt, what, code,
                                                 " ".join(shlex.quote(c) for c in cmd),
                                                 err.decode("utf-8", "replace")))

    def add(self, fmt, name, make, names, watch=(), reach_parser=False):
        """`make(folder)` writes the hostile input into `folder` and returns
        (command, hostile path)."""
        folder = os.path.join(self.runs, fmt, name)
        os.makedirs(folder, exist_ok=True)
        cmd, hostile = make(folder)
        base = os.path.basename(hostile)
        self.variants.append(Variant(fmt, name, folder, cmd, hostile,
                                     [base] + list(names), watch, reach_parser))

    # --- fixtures --------------------------------------------------------

    def setup(self):
        os.makedirs(self.fixture("tmp"), exist_ok=True)
        os.makedirs(self.runs, exist_ok=True)
        env_cc = os.environ.get("CC", "cc")
        if not shutil.which(env_cc):
            self.failures.append("FAIL: setup: no C compiler (%s) for make_artifact.py" % env_cc)
            return False
        subprocess.check_call([sys.executable, os.path.join(HERE, "make_artifact.py"),
                               self.fixture("art")], stdout=subprocess.DEVNULL)
        rng = np.random.default_rng(0)
        self.tokens = [int(t) for t in rng.integers(0, VOCAB, 64)]
        write(self.fixture("tok.bin"), token_file(self.tokens))
        self.step = self.fixture("step")
        needs_step = any(self.wanted(f) for f in
                         ("safetensors", "checkpoint", "json", "training", "tokens"))
        if needs_step:
            if not self.tool([self.trc_run, os.path.join(self.models, "gpt2_op17_dyn.onnx"),
                              "--device", "cpu", "--batch-size", str(BATCH), "--seq-len",
                              str(SEQ), "--save-artifact", self.step], "--save-artifact"):
                return False
        if self.wanted("json"):
            # A step saved without --config refuses every --config (even
            # '{}'), so --config files are read by a step saved with one.
            write(self.fixture("config.json"), json.dumps(CONFIG).encode())
            if not self.tool([self.trc_run, os.path.join(self.models, "gpt2_op17_dyn.onnx"),
                              "--device", "cpu", "--batch-size", str(BATCH), "--seq-len",
                              str(SEQ), "--config", self.fixture("config.json"),
                              "--save-artifact", self.fixture("step-config")],
                             "--save-artifact --config"):
                return False
        if self.wanted("safetensors") or self.wanted("checkpoint"):
            if not self.tool(self.train_cmd(self.fixture("tok.bin"), steps=1) +
                             ["--checkpoint-dir", self.fixture("ck"), "--checkpoint-every", "1"],
                             "checkpoint"):
                return False
        return True

    def train_cmd(self, data, steps=1, step=None, batch=BATCH):
        return [self.trc_run, step or self.step, "--data", data, "--batch-size", str(batch),
                "--seq-len", str(SEQ), "--steps", str(steps)]

    def eval_cmd(self, artifact, x, out):
        return [self.trc_run, artifact, "--input", "x=" + x, "--input",
                "in/two=" + self.fixture("art", "two.npy"), "--output-dir", out]

    # --- the formats -----------------------------------------------------

    def add_npy(self):
        valid = read(self.fixture("art", "x.npy"))
        data = np.load(self.fixture("art", "x.npy")).tobytes()
        good = self.fixture("art", "good")
        self.baseline("npy", self.eval_cmd(good, self.fixture("art", "x.npy"),
                                           os.path.join(self.runs, "npy", "baseline-out")),
                      "x.npy")
        for name, content in npy_variants(valid, data):
            def make(folder, content=content, name=name):
                path = os.path.join(folder, "npy-%s.npy" % name)
                write(path, content)
                return self.eval_cmd(good, path, os.path.join(folder, "out")), path
            self.add("npy", name, make, ["--input"],
                     watch=[good, self.fixture("art", "two.npy")])

    def add_npz(self):
        model = os.path.join(self.models, "gpt2cls_op17_dyn.onnx")
        rng = np.random.default_rng(0)
        ids = rng.integers(1, VOCAB, (12, 16)).astype(np.int64)
        labels = (np.arange(12) % 2).astype(np.int64)
        valid_path = self.fixture("rows.npz")
        np.savez(valid_path, input_ids=ids, labels=labels)
        crafted, variants = npz_variants(ids, labels, read(valid_path))
        # The crafted archive (the variants' base) must be a valid .npz.
        write(self.fixture("crafted.npz"), crafted)
        with np.load(self.fixture("crafted.npz")) as z:
            assert (z["input_ids"] == ids).all() and (z["labels"] == labels).all()
        self.baseline("npz", [self.trc_run, model, "--data", self.fixture("crafted.npz"),
                              "--batch-size", "4", "--steps", "1"], "crafted.npz")
        for name, content in variants:
            def make(folder, content=content, name=name):
                path = os.path.join(folder, "npz-%s.npz" % name)
                write(path, content)
                return [self.trc_run, model, "--data", path, "--batch-size", "4",
                        "--steps", "1"], path
            self.add("npz", name, make, ["--data"], watch=[model])

    def checkpoint_copy(self, folder, name):
        ck = os.path.join(folder, "ck-" + name)
        shutil.copytree(self.fixture("ck"), ck)
        return ck, os.path.join(ck, "step-1")

    def resume_cmd(self, ck):
        return self.train_cmd(self.fixture("tok.bin"), steps=2) + [
            "--checkpoint-dir", ck, "--checkpoint-every", "1", "--resume"]

    def add_safetensors(self):
        valid = read(self.fixture("ck", "step-1", "tensors.safetensors"))
        state = read(self.fixture("ck", "step-1", "state.json"))
        body = state_body(state.decode("latin-1")).encode("latin-1")
        # Baseline: the same tensors re-serialized and state.json re-signed
        # (proves that the re-signing reaches the parser).
        header, payload = st_split(valid)
        same = st_join(header.rstrip(b" "), payload)
        folder = os.path.join(self.runs, "safetensors", "baseline-resigned")
        os.makedirs(folder, exist_ok=True)
        ck, stepdir = self.checkpoint_copy(folder, "resigned")
        write(os.path.join(stepdir, "tensors.safetensors"), same)
        write(os.path.join(stepdir, "state.json"), sign_state(with_tensors(body, same)))
        self.baseline("safetensors", self.resume_cmd(ck), "re-signed")
        for name, content in safetensors_variants(valid):
            def make(folder, content=content, name=name):
                ck, stepdir = self.checkpoint_copy(folder, name)
                write(os.path.join(stepdir, "tensors.safetensors"), content)
                write(os.path.join(stepdir, "state.json"), sign_state(with_tensors(body, content)))
                return self.resume_cmd(ck), ck
            self.add("safetensors", name, make, ["tensors.safetensors"],
                     watch=[self.step, self.fixture("tok.bin")], reach_parser=True)

    def add_checkpoint(self):
        state = read(self.fixture("ck", "step-1", "state.json"))
        body = state_body(state.decode("latin-1")).encode("latin-1")
        folder = os.path.join(self.runs, "checkpoint", "baseline-resigned")
        os.makedirs(folder, exist_ok=True)
        ck, stepdir = self.checkpoint_copy(folder, "resigned")
        write(os.path.join(stepdir, "state.json"), sign_state(body))
        self.baseline("checkpoint", self.resume_cmd(ck), "re-signed")
        variants = [(n, "state.json", d, r) for n, d, r in state_variants(state)]
        variants += [("latest-" + n, "latest", d, False) for n, d in (
            ("empty", b""), ("missing-step", b"step-9\n"), ("step-2e64", b"step-%d\n" % 2**64),
            ("traversal", b"../../fixtures/ck/step-1\n"), ("nul", b"step-1\0\n"),
            ("non-utf8", b"step-\xff\n"))]
        for name, file, content, resigned in variants:
            def make(folder, content=content, name=name, file=file):
                ck, stepdir = self.checkpoint_copy(folder, name)
                target = os.path.join(ck if file == "latest" else stepdir, file)
                write(target, content)
                return self.resume_cmd(ck), ck
            self.add("checkpoint", name, make, [file, "--checkpoint-dir"],
                     watch=[self.step, self.fixture("tok.bin")], reach_parser=resigned)

    def add_json(self):
        valid, variants = config_variants()
        step = self.fixture("step-config")
        self.baseline("json", self.train_cmd(self.fixture("tok.bin"), step=step) +
                      ["--config", self.fixture("config.json")], "config.json")
        for name, content in variants:
            def make(folder, content=content, name=name):
                path = os.path.join(folder, "config-%s.json" % name)
                write(path, content)
                return self.train_cmd(self.fixture("tok.bin"), step=step) + ["--config", path], path
            self.add("json", name, make, ["--config"],
                     watch=[step, self.fixture("tok.bin")])

    def add_manifest(self):
        good = self.fixture("art", "good")
        text = read(os.path.join(good, "manifest.trc"))
        for name, content in manifest_variants(text):
            def make(folder, content=content, name=name):
                art = os.path.join(folder, "manifest-" + name)
                shutil.copytree(good, art)
                write(os.path.join(art, "manifest.trc"), content)
                return self.eval_cmd(art, self.fixture("art", "x.npy"),
                                     os.path.join(folder, "out")), art
            self.add("manifest", name, make, ["manifest.trc"],
                     watch=[self.fixture("art", "x.npy"), self.fixture("art", "two.npy")])

    def add_bundle(self):
        valid, variants = bundle_variants(self.fixture("art", "good"))
        write(self.fixture("good.trc"), valid)
        self.baseline("bundle", self.eval_cmd(self.fixture("good.trc"),
                                              self.fixture("art", "x.npy"),
                                              os.path.join(self.runs, "bundle", "baseline-out")),
                      "good.trc")
        for name, content in variants:
            def make(folder, content=content, name=name):
                path = os.path.join(folder, "bundle-%s.trc" % name)
                write(path, content)
                return self.eval_cmd(path, self.fixture("art", "x.npy"),
                                     os.path.join(folder, "out")), path
            self.add("bundle", name, make, [],
                     watch=[self.fixture("art", "x.npy"), self.fixture("art", "two.npy")])

    def add_training(self):
        text = read(os.path.join(self.step, "training.trc"))
        for name, content in training_variants(text):
            def make(folder, content=content, name=name):
                step = os.path.join(folder, "step-" + name)
                shutil.copytree(self.step, step)
                write(os.path.join(step, "training.trc"), content)
                batch = 4 if name == "batch-4-flags" else BATCH
                return self.train_cmd(self.fixture("tok.bin"), step=step, batch=batch), step
            self.add("training", name, make, ["training.trc"],
                     watch=[self.fixture("tok.bin")])

    def add_tokens(self):
        self.baseline("tokens", self.train_cmd(self.fixture("tok.bin")), "tok.bin")
        for name, content in token_variants(self.tokens):
            def make(folder, content=content, name=name):
                path = os.path.join(folder, "tokens-%s.bin" % name)
                write(path, content)
                return self.train_cmd(path), path
            self.add("tokens", name, make, ["--data"], watch=[self.step])

    def plan_cmd(self, *extra):
        return [self.trc_plan, "--model", PLAN_MODEL, "--global-batch", "8"] + list(extra)

    def add_cluster(self):
        fifo = self.fixture("profile.fifo")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        valid, variants = cluster_variants(fifo)
        write(self.fixture("cluster.json"), json.dumps(valid).encode())
        self.baseline("cluster", self.plan_cmd("--cluster", self.fixture("cluster.json")),
                      "cluster.json")
        for name, content in variants:
            def make(folder, content=content, name=name):
                path = os.path.join(folder, "cluster-%s.json" % name)
                write(path, content.replace(b'"SELF"', json.dumps(path).encode()))
                return self.plan_cmd("--cluster", path), path
            self.add("cluster", name, make, ["--cluster"])

    def add_plan_input(self, fmt, flag, valid, variants):
        """trc-plan's JSON inputs beside --cluster cpu:1: `fmt`.json read by `flag`."""
        write(self.fixture(fmt + ".json"), json.dumps(valid).encode())
        self.baseline(fmt, self.plan_cmd("--cluster", "cpu:1", flag, self.fixture(fmt + ".json")),
                      fmt + ".json")
        for name, content in variants:
            def make(folder, content=content, name=name):
                path = os.path.join(folder, "%s-%s.json" % (fmt, name))
                write(path, content)
                return self.plan_cmd("--cluster", "cpu:1", flag, path), path
            self.add(fmt, name, make, [flag])

    def add_profile(self):
        self.add_plan_input("profile", "--device-profile", *profile_variants())

    def add_plan(self):
        self.add_plan_input("plan", "--plan", *plan_variants())

    FORMATS = ["npy", "npz", "safetensors", "checkpoint", "json", "manifest", "bundle",
               "training", "tokens", "cluster", "profile", "plan"]

    def main(self):
        start = time.monotonic()
        if os.path.exists(self.scratch) and os.listdir(self.scratch):
            shutil.rmtree(self.fixtures, ignore_errors=True)
            shutil.rmtree(self.runs, ignore_errors=True)
        os.makedirs(self.scratch, exist_ok=True)
        if not self.setup():
            print("\n".join(self.failures))
            return 1
        for fmt in self.FORMATS:
            if self.wanted(fmt):
                getattr(self, "add_" + fmt)()
        scratch_before = snapshot(self.scratch)
        fixtures_before = snapshot(self.fixtures)
        fixture_hashes = {p: tree_hash(os.path.join(self.fixtures, p))
                          for p in fixtures_before if not p.endswith("/")
                          and not p.startswith("tmp/") and not p.endswith(".fifo")}
        results = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.args.jobs) as pool:
            futures = {pool.submit(check, v): v for v in self.variants}
            for future in concurrent.futures.as_completed(futures):
                results[futures[future]] = future.result()
        left = sorted(snapshot(self.fixtures) - fixtures_before)
        if left:
            self.failures.append("FAIL: fixtures: files appeared among the shared inputs: %s"
                                 % ", ".join(left[:10]))
        # Anything new outside the variants' own folders (those are checked
        # per variant) and the fixtures (above).
        own = tuple(os.path.relpath(v.folder, self.scratch) + "/" for v in self.variants)
        left = sorted(p for p in snapshot(self.scratch) - scratch_before
                      if not p.startswith(own) and not p.startswith("fixtures/"))
        if left:
            self.failures.append("FAIL: scratch: files appeared outside the variants' folders: %s"
                                 % ", ".join(left[:10]))
        for p, digest in fixture_hashes.items():
            if tree_hash(os.path.join(self.fixtures, p)) != digest:
                self.failures.append("FAIL: fixtures: %s changed" % p)
        for fmt in self.FORMATS:
            mine = [v for v in self.variants if v.fmt == fmt]
            if not mine:
                continue
            bad = [v for v in mine if results[v][0]]
            if bad:
                print("%s: %d of %d hostile files broke the rules" % (fmt, len(bad), len(mine)))
            else:
                print("%s: %d hostile files, each refused with one error naming it"
                      % (fmt, len(mine)))
            for v in bad:
                self.failures.append("FAIL: %s %s: %s" % (fmt, v.name, results[v][0]))
            if self.args.verbose:
                for v in mine:
                    print("  %s %-26s %5.2f s  %s" % (fmt, v.name, results[v][1],
                                                      results[v][2][:150]), file=sys.stderr)
        for f in self.failures:
            print(f)
        if self.args.verbose:
            print("total: %d variants, %.1f s" % (len(self.variants), time.monotonic() - start),
                  file=sys.stderr)
        return 1 if self.failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trc-run", default="trc-run")
    parser.add_argument("--trc-plan", default="trc-plan")
    parser.add_argument("--models", required=True, help="the exported test models (%%models)")
    parser.add_argument("--scratch", required=True, help="a folder for the files and runs")
    parser.add_argument("--only", help="comma-separated formats (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="variants run at once")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="timings and every variant's error line on stderr")
    args = parser.parse_args()
    return Suite(args).main()


if __name__ == "__main__":
    sys.exit(main())

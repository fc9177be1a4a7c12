#!/usr/bin/env python3
"""Copies a trc artifact folder and forges it the way issue 33's sweep did:
a manifest edited, or another artifact's program put in, with every checksum
made right again, so only the program's signature (trc_signature,
runtime/formats/ProgramSignature.h) can tell.

    python3 test/Inputs/forge_artifact.py SRC DST [--sub REGEX REPLACEMENT]...
                                          [--program OTHER_ARTIFACT]

--sub applies re.sub(REGEX, REPLACEMENT, manifest, flags=re.M) in order
(each must match at least once); --program copies OTHER_ARTIFACT/program.so
over DST's. The program record is rewritten with the program's size and its
FNV-1a 64 (bare hex, which runtimes still verify: docs/ARTIFACT.md).
"""
import argparse
import os
import re
import shutil
import sys


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--sub", nargs=2, action="append", default=[])
    parser.add_argument("--program")
    args = parser.parse_args()
    shutil.rmtree(args.dst, ignore_errors=True)
    shutil.copytree(args.src, args.dst)
    if args.program:
        shutil.copyfile(os.path.join(args.program, "program.so"),
                        os.path.join(args.dst, "program.so"))
    path = os.path.join(args.dst, "manifest.trc")
    with open(path) as f:
        text = f.read()
    for pattern, replacement in args.sub:
        text, count = re.subn(pattern, replacement, text, flags=re.M)
        if count == 0:
            sys.exit("forge_artifact.py: no match for %r" % pattern)
    with open(os.path.join(args.dst, "program.so"), "rb") as f:
        program = f.read()
    text = re.sub(r"^program (\S+) \d+ \S+$",
                  lambda m: "program %s %d %s" % (m.group(1), len(program), fnv1a64(program)),
                  text, flags=re.M)
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

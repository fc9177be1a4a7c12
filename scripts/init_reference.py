#!/usr/bin/env python3
"""An independent implementation of the `init` record's generator, written
from docs/ARTIFACT.md ("Initialized parameters") in plain Python (whose
floats are IEEE-754 binary64, each operation rounded to nearest, with no
fused multiply-add), so the runtime's values can be checked bit for bit.

    python3 init_reference.py KIND A B SEED FIRST COUNT

prints the binary64 values of elements FIRST .. FIRST+COUNT-1, one per line,
as 16 hex digits of their bits (KIND: constant, normal or uniform; A, B as
the record's numbers; B and SEED ignored for constant).
"""
import math
import struct
import sys

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def splitmix64_output(seed, n):
    """Output n (0, 1, ...) of SplitMix64 seeded with `seed`."""
    z = (seed + (n + 1) * GAMMA) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def unit(bits):
    return float(bits >> 11) * 2.0 ** -53


SQRT_HALF = float.fromhex("0x1.6a09e667f3bcdp-1")
LN2 = float.fromhex("0x1.62e42fefa39efp-1")
HALF_PI = float.fromhex("0x1.921fb54442d18p+0")
LOG_C = [1.0 / float(2 * k + 1) for k in range(12)]
COS_A = [(-1.0 if k % 2 else 1.0) / float(math.factorial(2 * k)) for k in range(11)]
SIN_B = [(-1.0 if k % 2 else 1.0) / float(math.factorial(2 * k + 1)) for k in range(11)]


def horner(c, y):
    p = c[-1]
    for k in range(len(c) - 2, -1, -1):
        p = p * y + c[k]
    return p


def portable_log(x):
    m, e = math.frexp(x)
    if m < SQRT_HALF:
        m = m * 2.0
        e = e - 1
    s = (m - 1.0) / (m + 1.0)
    w = s * s
    return float(e) * LN2 + (2.0 * s) * horner(LOG_C, w)


def portable_cos_2pi(t):
    t4 = 4.0 * t
    q = int(t4)
    f = t4 - float(q)
    exchange = f > 0.5
    x = (1.0 - f if exchange else f) * HALF_PI
    y = x * x
    c = horner(COS_A, y)
    s = x * horner(SIN_B, y)
    cos_f, sin_f = (s, c) if exchange else (c, s)
    return [cos_f, -sin_f, -cos_f, sin_f][q & 3]


def value(kind, a, b, seed, i):
    if kind == "constant":
        return a
    if kind == "uniform":
        return a + (b - a) * unit(splitmix64_output(seed, i))
    u1 = 1.0 - unit(splitmix64_output(seed, 2 * i))
    u2 = unit(splitmix64_output(seed, 2 * i + 1))
    r = math.sqrt(-2.0 * portable_log(u1))
    return a + b * (r * portable_cos_2pi(u2))


def main():
    kind, a, b, seed, first, count = sys.argv[1:7]
    a, b, seed, first, count = float(a), float(b), int(seed), int(first), int(count)
    out = []
    for i in range(first, first + count):
        out.append(struct.pack(">d", value(kind, a, b, seed, i)).hex())
    print("\n".join(out))


if __name__ == "__main__":
    main()

"""Checks a `trc-run --profile` trace (test/Training/profile.test).

usage: check_profile.py TRACE.json

Reads the file with Python's strict json module and prints, per rank
(pid), its process name, its step count, how many program spans lie inside
a compute phase of the same lane, the collectives (name and group size)
that lie inside a program span, and the per-op spans (category "op": a
loop nest or BLAS call of a CPU program, with its ONNX node) by name, so
FileCheck can match them. Exits 1 with a FAIL line when a span has no
parent where the trainer nests it, or the op spans take more time than
their programs.
"""
import collections
import json
import sys


def inside(inner, outer):
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def main(path):
    with open(path) as f:
        trace = json.load(f)
    assert trace["displayTimeUnit"] == "ms"
    names, spans = {}, collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            names[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "X":
            spans[e["pid"]].append(e)
    print("ranks:", " ".join(str(p) for p in sorted(names)))
    ok = True
    for pid in sorted(names):
        mine = spans[pid]
        steps = [s for s in mine if s["cat"] == "step"]
        computes = [s for s in mine if s["cat"] == "phase" and s["name"] == "compute"]
        programs = [s for s in mine if s["cat"] == "program"]
        nested = [p for p in programs
                  if any(inside(p, c) and p["tid"] == c["tid"] for c in computes)]
        collectives = collections.Counter()
        for c in (s for s in mine if s["cat"] == "collective"):
            if not any(inside(c, p) for p in programs):
                print("FAIL: rank %d: collective %s outside every program" % (pid, c["name"]))
                ok = False
            collectives["%s ranks=%d" % (c["name"], c["args"]["ranks"])] += 1
        if len(nested) != len(programs) or not programs:
            print("FAIL: rank %d: %d of %d programs inside a compute phase"
                  % (pid, len(nested), len(programs)))
            ok = False
        ops = collections.Counter()
        op_time = 0
        for o in (s for s in mine if s["cat"] == "op"):
            if not any(inside(o, p) for p in programs) or "function" not in o["args"]:
                print("FAIL: rank %d: op %s outside every program or unnamed" % (pid, o["name"]))
                ok = False
            ops[o["name"]] += 1
            op_time += o["dur"]
        if op_time > sum(p["dur"] for p in programs):
            print("FAIL: rank %d: the op spans outlast their programs" % pid)
            ok = False
        print("%s: %d steps, %d programs inside compute phases" % (names[pid], len(steps),
                                                                   len(nested)))
        for name in sorted(collectives):
            print("  collective %s" % name)
        for name in sorted(ops):
            print("  op %s" % name)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

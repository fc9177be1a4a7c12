#!/usr/bin/env python3
"""Checks of initialized parameters (weights=init, trc-run --init-weights).

    check_init_weights.py sizes ARTIFACT
        every trainable param is an `init` record ('-' offset), every frozen
        one has its bytes, and weights.bin holds exactly the frozen ones'
        distinct values (64-byte aligned; equal ones share an offset);
        prints the kinds and the byte counts.
    check_init_weights.py params ARTIFACT CHECKPOINT.safetensors
        each initialized param of ARTIFACT's manifest, as trc-run made it
        (read from a checkpoint written after one step at a negligible
        learning rate), is what scripts/init_reference.py (written from
        docs/ARTIFACT.md) computes from its record, rounded to f32.
    check_init_weights.py data-parallel TRC_RUN MODEL DATA WORK
        trc-run --init-weights on 1 rank and on 2 ranks under ZeRO-3 (each
        rank makes its shard of every parameter) gives the same losses
        within 1e-5.
"""
import json
import os
import subprocess
import sys
import urllib.parse

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import init_reference  # noqa: E402

DTYPE_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i1": 1, "i8": 1, "i16": 2, "i32": 4,
               "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8}


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def read_manifest(artifact):
    """{name: slot dict}, and the weights record's byte count."""
    slots, by_index, weights = {}, {}, None
    with open(os.path.join(artifact, "manifest.trc")) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if fields[0] == "weights":
                weights = int(fields[2])
            elif fields[0] == "slot" and fields[2] == "param":
                rank = int(fields[5])
                shape = [int(d) for d in fields[6:6 + rank]]
                slot = {"name": urllib.parse.unquote(fields[3]), "dtype": fields[4], "shape": shape,
                        "offset": fields[6 + rank], "use": fields[7 + rank], "init": None}
                slots[slot["name"]] = slot
                by_index[int(fields[1])] = slot
            elif fields[0] == "init":
                by_index[int(fields[1])]["init"] = fields[2:]
    return slots, weights


def sizes(artifact):
    slots, weights = read_manifest(artifact)
    ranges, kinds, frozen = {}, {}, 0
    for slot in slots.values():
        if slot["use"] == "trainable":
            if slot["offset"] != "-" or slot["init"] is None:
                fail(f"trainable param {slot['name']} is not initialized")
            kinds[slot["init"][0]] = kinds.get(slot["init"][0], 0) + 1
        else:
            if slot["offset"] == "-" or slot["init"] is not None:
                fail(f"frozen param {slot['name']} lost its values")
            size = int(np.prod(slot["shape"])) * DTYPE_BYTES[slot["dtype"]]
            ranges.setdefault(int(slot["offset"]), set()).add(size)
            frozen += 1
    # Distinct frozen values back to back (64-byte aligned); equal ones shared.
    end = 0
    for offset in sorted(ranges):
        if offset != (end + 63) // 64 * 64 or len(ranges[offset]) != 1:
            fail(f"frozen bytes at {offset} (sizes {ranges[offset]}), expected them at "
                 f"{(end + 63) // 64 * 64}")
        end = offset + ranges[offset].pop()
    on_disk = os.path.getsize(os.path.join(artifact, "weights.bin"))
    if on_disk != weights or weights != end:
        fail(f"weights.bin holds {on_disk} bytes, the manifest says {weights}, "
             f"the frozen params end at {end}")
    print("init kinds:", ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    print(f"weights.bin: {on_disk} bytes, {frozen} frozen params in {len(ranges)} distinct "
          f"value(s)")


def params(artifact, checkpoint):
    from safetensors.numpy import load_file
    tensors = load_file(checkpoint)
    slots, _ = read_manifest(artifact)
    checked = 0
    for name, slot in sorted(slots.items()):
        if slot["init"] is None:
            continue
        kind, numbers = slot["init"][0], slot["init"][1:]
        a = float(numbers[0])
        b = float(numbers[1]) if kind != "constant" else 0.0
        seed = int(numbers[2]) if kind != "constant" else 0
        count = int(np.prod(slot["shape"]))
        want = np.array([init_reference.value(kind, a, b, seed, i) for i in range(count)],
                        dtype=np.float64).astype(np.float32).reshape(slot["shape"])
        got = tensors[name]
        if got.shape != want.shape:
            fail(f"{name}: shape {got.shape}, expected {want.shape}")
        # One SGD step at lr 1e-30 moves only values within ~1e-29 of 0.
        worst = float(np.max(np.abs(got.astype(np.float64) - want)))
        if worst > 1e-25:
            fail(f"{name}: differs from the reference by {worst:.3g}")
        checked += 1
    print(f"{checked} initialized params match scripts/init_reference.py")


def data_parallel(trc_run, model, data, work):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")

    def train(name, ranks, extra):
        metrics = os.path.join(work, name + ".jsonl")
        launcher = ["mpirun", "--oversubscribe", "-np", str(ranks)] if ranks > 1 else []
        command = launcher + [trc_run, model, "--data", data, "--batch-size", "4", "--seq-len",
                              "16", "--steps", "5", "--seed", "3", "--metrics", metrics, *extra]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"{name}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
        with open(metrics) as f:
            return [json.loads(line)["loss"] for line in f if line.strip()]

    one = train("init-1", 1, ["--init-weights"])
    two = train("init-2-zero3", 2, ["--init-weights", "--config",
                                    json.dumps({"sharded_data_parallel_degree": 2})])
    worst = max(abs(x - y) / abs(x) for x, y in zip(one, two))
    print(f"2 ranks zero3 --init-weights: {len(two)} steps, largest relative difference "
          f"{worst:.2e}")
    if len(one) != len(two) or worst > 1e-5:
        fail(f"the 2-rank losses {two} are not the 1-rank losses {one}")


def main():
    mode = sys.argv[1]
    if mode == "sizes":
        sizes(sys.argv[2])
    elif mode == "params":
        params(sys.argv[2], sys.argv[3])
    elif mode == "data-parallel":
        data_parallel(*sys.argv[2:6])
    else:
        fail(f"unknown mode {mode}")


if __name__ == "__main__":
    main()

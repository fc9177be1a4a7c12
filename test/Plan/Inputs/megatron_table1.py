"""Checks trc-plan against every row of Megatron-LM's Table 1 (2104.04473).

For each row (A100 80 GB, seq 2048, vocab 51200): the published plan
(its tensor and pipeline degrees, full recomputation, no ZeRO or sequence
parallelism, the 1F1B schedule with microbatches of one sample) must be
predicted within 15% of the published TFLOP/s per GPU, and the search's own
plan must be predicted at least as fast (step time) and fit in 80 GB.
Prints one line per row and exits 1 on the first failed row.

Usage: megatron_table1.py TRC_PLAN
"""
import json
import subprocess
import sys

# params (B), heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s per GPU
ROWS = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]


def plan(tool, model, gpus, batch, fixed=None):
    cmd = [tool, "--model", model, "--cluster", "a100-80gb:%d" % gpus,
           "--global-batch", str(batch), "--json"]
    if fixed is not None:
        cmd += ["--plan", json.dumps(fixed)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def main():
    tool = sys.argv[1]
    worst = 0.0
    for params, heads, hidden, layers, tp, pp, gpus, batch, published in ROWS:
        model = "gpt:layers=%d,hidden=%d,heads=%d,seq=2048,vocab=51200" % (layers, hidden, heads)
        given = plan(tool, model, gpus, batch,
                     {"tensor_parallel_degree": tp, "pipeline_parallel_degree": pp,
                      "recompute": "full", "zero_stage": 0, "sequence_parallel": False,
                      "pipeline_schedule": "1f1b", "microbatches": batch * tp * pp // gpus})
        own = plan(tool, model, gpus, batch)
        predicted = given["predicted"]["tflops_per_device"]
        error = predicted / published - 1
        worst = max(worst, abs(error))
        print("%7.1fB published %3d TFLOP/s, predicted %5.1f (%+5.1f%%); search: %s "
              "%.2f s vs %.2f s, %.1f GB, %.1f TFLOP/s, searched in %.3f s" % (
                  params, published, predicted, 100 * error, own["layout"],
                  own["predicted"]["step_time_s"], given["predicted"]["step_time_s"],
                  own["predicted"]["memory_per_device_bytes"] / 1e9,
                  own["predicted"]["tflops_per_device"], own["search"]["seconds"]))
        if abs(error) > 0.15:
            print("FAIL: %.1fB: predicted %.1f vs published %d" % (params, predicted, published))
            return 1
        if own["predicted"]["step_time_s"] > given["predicted"]["step_time_s"] * (1 + 1e-12):
            print("FAIL: %.1fB: the search's plan is slower than the published one" % params)
            return 1
        if own["predicted"]["memory_per_device_bytes"] > 80e9:
            print("FAIL: %.1fB: the search's plan does not fit 80 GB" % params)
            return 1
    print("all %d rows pass; worst error %.1f%%" % (len(ROWS), 100 * worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The PyTorch side of bench/elastic_restart.py: one torchrun worker training
the bench GPT-2 (scripts/export_models.py, the model trc exports) with DDP over
gloo on CPU, as a torchrun elastic job is written: it resumes from its
checkpoint when one exists, saves one every EVERY steps (rank 0, atomically),
and rank 0 appends {"step", "loss", "time"} lines to METRICS.

    torchrun --standalone --nproc_per_node 2 --max_restarts 1 \\
        bench/torch_elastic_worker.py DATA WORK METRICS STEPS EVERY BATCH SEQ

Batches: global BATCH rows of SEQ bytes (vocabulary 256) at positions fixed
by the step, split over the ranks, so a resumed run sees the same data.
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import export_models as em  # noqa: E402


def main():
    data, work, metrics, steps, every, batch, seq = sys.argv[1:]
    steps, every, batch, seq = int(steps), int(every), int(batch), int(seq)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    em.configure("bench")
    model = em.build("gpt2", init="gpt2")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    checkpoint = os.path.join(work, "torch-checkpoint.pt")
    start = 0
    if os.path.exists(checkpoint):
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    tokens = torch.from_numpy(np.frombuffer(open(data, "rb").read(), dtype=np.uint8).astype(np.int64))
    rows = batch // world
    for step in range(start + 1, steps + 1):
        first = ((step - 1) * batch + rank * rows) * seq
        window = torch.stack([tokens[(first + r * seq) % (len(tokens) - seq - 1):][:seq + 1]
                              for r in range(rows)])
        loss = ddp(window[:, :-1].contiguous(), window[:, 1:].contiguous())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            with open(metrics, "a") as f:
                f.write(json.dumps({"step": step, "loss": loss.item(), "time": time.time()}) + "\n")
            if step % every == 0:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "step": step}, checkpoint + ".tmp")
                os.replace(checkpoint + ".tmp", checkpoint)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Checks the dropout outputs of test/Training/dropout.test: OUT/a and OUT/b
ran with key 1234, OUT/c with key 99 (loss.npy and the gradient of w).

    python3 check_dropout.py OUT
"""
import math
import os
import sys

import numpy as np

root = sys.argv[1]
p = 0.3


def load(run):
    files = sorted(os.listdir(os.path.join(root, run)))
    grad = [f for f in files if f.startswith("grad")][0]
    return (np.load(os.path.join(root, run, "loss.npy")),
            np.load(os.path.join(root, run, grad)))


(loss_a, grad_a), (_, grad_b), (_, grad_c) = load("a"), load("b"), load("c")
n = grad_a.size
dropped = float((grad_a == 0).mean())
sigma = math.sqrt(p * (1 - p) / n)
print(f"dropped fraction within 3 sigma of {p}: {abs(dropped - p) < 3 * sigma}")
scale = np.float32(1 / (1 - p))
print("gradient values {0, 1/(1-p)}:",
      bool(np.all((grad_a == 0) | np.isclose(grad_a, scale, rtol=1e-6))))
print("loss equals the sum of the gradient:",
      bool(np.isclose(loss_a, grad_a.astype(np.float64).sum(), rtol=1e-4)))
print("same key, same mask:", bool(np.array_equal(grad_a, grad_b)))
print("other key, other mask:", bool((grad_a != grad_c).mean() > 0.2))

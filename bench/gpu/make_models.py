"""Scripts the GPU benchmark's models to TorchScript archives: python3 make_models.py OUT_DIR."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from models import CASES, Affine  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
seen = {}
for name, ctor, shape in CASES:
    key = ctor.__name__ if hasattr(ctor, "__name__") else str(ctor)
    m = ctor().eval()
    torch.jit.script(m).save(os.path.join(out, name + ".pt"))
    print(name, "x".join(map(str, shape)))
torch.jit.script(Affine().eval()).save(os.path.join(out, "affine.pt"))
print("affine (bandwidth probe)")

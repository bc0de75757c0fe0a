"""The GPU benchmark's models, defined once for Kiln (scripted to TorchScript) and the Inductor peer."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "resources", "examples", "src"))
from sample_models import Block  # noqa: E402


class PointwiseChain(nn.Module):
    def forward(self, x):
        for _ in range(20):
            x = x + torch.sin(x)
        return x


class Affine(nn.Module):
    """One read and one write per element: the bandwidth probe next to the arithmetic-bound chain."""

    def forward(self, x):
        return torch.relu(x) * 2.0 + 1.0


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(1024)
        self.fc1 = nn.Linear(1024, 4096)
        self.fc2 = nn.Linear(4096, 1024)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(self.ln(x))))


def EncoderBlock():
    """Pre-norm transformer encoder block, attention written with matmul + softmax: the sample model
    Block (resources/examples/src/sample_models.py) at width 512 with 8 heads."""
    return Block(d=512, heads=8)


def resnet18():
    import torchvision
    return torchvision.models.resnet18()


# name, constructor, input shape
CASES = [
    ("pointwise_1e4", PointwiseChain, (10000,)),
    ("pointwise_1e7", PointwiseChain, (10000000,)),
    ("mlp_b64", Mlp, (64, 1024)),
    ("encoder_b8", EncoderBlock, (8, 128, 512)),
    ("resnet18_b1", resnet18, (1, 3, 224, 224)),
    ("resnet18_b32", resnet18, (32, 3, 224, 224)),
]

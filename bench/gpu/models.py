"""The GPU benchmark's models, defined once for Kiln (scripted to TorchScript) and the Inductor peer."""
import torch
import torch.nn as nn
import torch.nn.functional as F


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


class EncoderBlock(nn.Module):
    """Pre-norm transformer encoder block, attention written with matmul + softmax."""

    def __init__(self, d: int = 512, heads: int = 8):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ff1 = nn.Linear(d, 4 * d)
        self.ff2 = nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q = q.reshape(b, t, h, c // h).transpose(1, 2)
        k = k.reshape(b, t, h, c // h).transpose(1, 2)
        v = v.reshape(b, t, h, c // h).transpose(1, 2)
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / ((c // h) ** 0.5), dim=-1)
        x = x + self.out(torch.matmul(att, v).transpose(1, 2).reshape(b, t, c))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


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

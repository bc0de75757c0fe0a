"""What one scaled_dot_product_attention call costs the host and the device, per way of calling it, at BERT-base
bfloat16's attention (batch 8, 12 heads of 64, 128 tokens, heads read strided from [B, T, 768] as Kiln reads them,
an additive [B, 1, 1, T] mask): PyTorch's own choice, each backend forced with sdpa_kernel, and the backends' private
ops called directly (no backend selection). Host: microseconds per call issued back to back without waiting (the
device keeps up, so the loop runs at the host's pace). Device: microseconds per call in a CUDA graph's replay. Each
direct call's output is compared with PyTorch's choice.
    python3 bench/gpu/probes/sdpa_host.py
"""
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, T, E = 8, 12, 128, 64
dt = torch.bfloat16
scale = E ** -0.5


def heads(x):
    return x.view(B, T, H, E).transpose(1, 2)


def host_us(fn, n=3000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    issued = time.perf_counter() - t
    torch.cuda.synchronize()
    return issued / n * 1e6


def device_us(fn, n=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    g.replay()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        best = min(best, a.elapsed_time(b) * 1e3 / n)
    return best


def main():
    torch.manual_seed(0)
    x = [torch.randn(B, T, H * E, device="cuda", dtype=dt) for _ in range(3)]
    q, k, v = (heads(t) for t in x)
    mask = torch.zeros(B, 1, 1, T, device="cuda", dtype=dt)
    mask[:, :, :, T - 9:] = torch.finfo(dt).min
    ref = F.scaled_dot_product_attention(q, k, v, mask, scale=scale)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; PyTorch's choice:",
          torch._fused_sdp_choice(q, k, v, mask, 0.0, False, scale=scale))
    ways = [
        ("a tensor add (the floor: Python and one dispatch)", lambda: torch.add(mask, 1.0)),
        ("scaled_dot_product_attention, PyTorch's choice", lambda: F.scaled_dot_product_attention(q, k, v, mask, scale=scale)),
    ]
    for name, backend in [("cuDNN", SDPBackend.CUDNN_ATTENTION), ("memory-efficient", SDPBackend.EFFICIENT_ATTENTION),
                          ("math", SDPBackend.MATH)]:
        def forced(backend=backend):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, mask, scale=scale)
        ways.append((f"scaled_dot_product_attention forced to {name} (inside sdpa_kernel)", forced))
    m4 = mask.expand(B, H, T, T)
    ways += [
        ("_scaled_dot_product_cudnn_attention directly",
         lambda: torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, mask, False, 0.0, False, False, scale=scale)[0]),
        ("_scaled_dot_product_efficient_attention directly (mask expanded)",
         lambda: torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, m4, False, 0.0, False, scale=scale)[0]),
    ]
    print("| way | host µs per call | device µs per call | max abs diff from PyTorch's choice |")
    print("|---|--:|--:|--:|")
    with torch.inference_mode():
        for name, fn in ways:
            try:
                out = fn()
                diff = (out.float() - ref.float()).abs().max().item() if out.shape == ref.shape else float("nan")
                print(f"| {name} | {host_us(fn):.1f} | {device_us(fn):.2f} | {diff:.3g} |")
            except Exception as e:  # a backend this machine or version refuses
                print(f"| {name} | failed: {str(e).splitlines()[0][:120]} | | |")


if __name__ == "__main__":
    main()

# cuDNN's depthwise convolution on the layers of window_kernels.cu (channels-last float32, batch 8), alone and
# followed by eager's batch norm and SiLU: device time per call from a CUDA graph of 50 calls, median of 7.
import torch, torch.nn.functional as F
torch.backends.cudnn.benchmark = False
layers = [(32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1), (144, 56, 5, 2), (240, 28, 5, 1), (240, 28, 3, 2),
          (480, 14, 3, 1), (480, 14, 5, 1), (672, 14, 5, 1), (672, 14, 5, 2), (1152, 7, 5, 1), (1152, 7, 3, 1)]

def timed(fn):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(50): fn()
    g.replay(); torch.cuda.synchronize()
    out = []
    for _ in range(7):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        out.append(a.elapsed_time(b) / 50 * 1e3)
    return sorted(out)[3]

with torch.no_grad():
    for c, hw, k, s in layers:
        x = torch.randn(8, c, hw, hw, device="cuda").to(memory_format=torch.channels_last)
        w = torch.randn(c, 1, k, k, device="cuda")
        m, v, ga, be = (torch.rand(c, device="cuda") + 0.5 for _ in range(4))
        conv = lambda: F.conv2d(x, w, None, s, k // 2, 1, c)
        full = lambda: F.silu(F.batch_norm(conv(), m, v, ga, be, False, 0.0, 1e-5))
        print(f"C{c:<5d} {hw:3d}x{hw:<3d} k{k} s{s}  cudnn {timed(conv):6.2f} us  +bn+silu {timed(full):6.2f} us")

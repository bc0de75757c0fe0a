# First calls of channels-last convolutions (the plans cuDNN builds on a new configuration): one after the
# other, or from 16 threads at once; each in a fresh process after an NCHW run of the model (as eager runs first).
# A third argument "nchw" makes the first calls contiguous ones instead (a new configuration for cuDNN too, as
# the NCHW run used batch 8 and these use batch 4); the environment (TORCH_CUDNN_V8_API_DISABLED,
# CUDA_MODULE_LOADING) is printed with the result. "steady" is all configurations' calls again, per pass, over 20.
import os, sys, time, threading, torch, torchvision
name, how = sys.argv[1], sys.argv[2]
layout = torch.contiguous_format if len(sys.argv) > 3 and sys.argv[3] == "nchw" else torch.channels_last
torch.backends.cudnn.benchmark = False
m = getattr(torchvision.models, name)().cuda().eval()
x = torch.randn(8, 3, 224, 224, device="cuda")
convs = []
hs = [c.register_forward_hook(lambda mod, i, o: convs.append((mod, tuple(i[0].shape))))
      for c in m.modules() if isinstance(c, torch.nn.Conv2d)]
with torch.no_grad():
    m(x)
torch.cuda.synchronize()
for h in hs:
    h.remove()
seen, work = set(), []
for c, shape in convs:
    key = (shape, tuple(c.weight.shape), c.stride, c.padding, c.groups, c.bias is not None)
    if key not in seen:
        seen.add(key)
        work.append((c, shape))
def first(c, shape):
    with torch.no_grad():
        t = torch.randn((4,) + shape[1:], device="cuda").to(memory_format=layout)
        w = c.weight.to(memory_format=layout)
        torch.nn.functional.conv2d(t, w, c.bias, c.stride, c.padding, c.dilation, c.groups)
t0 = time.perf_counter()
if how == "serial":
    for c, s in work:
        first(c, s)
else:
    idx = [0]; lock = threading.Lock()
    def run():
        while True:
            with lock:
                i = idx[0]; idx[0] += 1
            if i >= len(work):
                return
            first(*work[i])
    ts = [threading.Thread(target=run) for _ in range(int(how))]
    [t.start() for t in ts]; [t.join() for t in ts]
torch.cuda.synchronize()
t1 = time.perf_counter()
for c, s in work:
    first(c, s)
torch.cuda.synchronize()
t2 = time.perf_counter()
for _ in range(20):
    for c, s in work:
        first(c, s)
torch.cuda.synchronize()
env = " ".join(f"{k}={os.environ[k]}" for k in ("TORCH_CUDNN_V8_API_DISABLED", "CUDA_MODULE_LOADING") if k in os.environ)
print(f"{name} {how} {'nchw' if layout == torch.contiguous_format else 'nhwc'} {env}: {len(convs)} convs, {len(work)} configurations, "
      f"first calls {1e3*(t1-t0):.0f} ms, again {1e3*(t2-t1):.0f} ms, steady {1e3*(time.perf_counter()-t2)/20:.1f} ms per pass")

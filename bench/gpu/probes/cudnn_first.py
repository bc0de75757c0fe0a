# First calls of channels-last convolutions (the plans cuDNN builds on a new configuration): one after the
# other, or from 16 threads at once; each in a fresh process after an NCHW run of the model (as eager runs first).
import sys, time, threading, torch, torchvision
name, how = sys.argv[1], sys.argv[2]
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
        t = torch.randn(shape, device="cuda").to(memory_format=torch.channels_last)
        w = c.weight.to(memory_format=torch.channels_last)
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
print(f"{name} {how}: {len(convs)} convs, {len(work)} configurations, first calls {1e3*(t1-t0):.0f} ms, again {1e3*(time.perf_counter()-t1):.0f} ms")

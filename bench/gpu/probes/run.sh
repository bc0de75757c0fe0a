# The probes behind the NVRTC and cuDNN figures of the README (compile section), run on the GPU machine:
#   bash bench/gpu/probes/run.sh   (gelu.cu and ln.cu: two units of the golden block.pt source)
cd "$(dirname "$0")"
export PATH=/opt/torch/.venv/bin:$PATH
g++ -O2 -std=c++17 nvrtc_threads.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lnvrtc -lpthread -o /tmp/nvt && LD_LIBRARY_PATH=/usr/local/cuda/lib64 /tmp/nvt gelu.cu ln.cu
g++ -O2 -std=c++17 nvrtc_fork.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread -o /tmp/nvf && LD_LIBRARY_PATH=/usr/local/cuda/lib64 /tmp/nvf gelu.cu ln.cu
nproc; cat /proc/cpuinfo | grep "model name" | head -1
for m in mobilenet_v3_small efficientnet_b0; do for h in serial 16 serial 4; do python3 cudnn_first.py $m $h 2>&1 | tail -1; done; done

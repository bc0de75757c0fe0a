# The probes behind the NVRTC, cuDNN and CUPTI figures of the README, run on the GPU machine:
#   bash bench/gpu/probes/run.sh
# The NVRTC units are two kernels of the golden block.pt CUDA source (its prelude plus one kernel each).
cd "$(dirname "$0")"
export PATH=/opt/torch/.venv/bin:$PATH
GOLDEN=../../../tests/data/golden/codegen/block.pt.cu.txt
unit() { awk -v k="$1" '/^\/\/ k[0-9]+_/ {sec = $2} !sec || sec == k' "$GOLDEN"; }
unit k5_gelu: > /tmp/gelu.cu
unit k0_row_layer_norm: > /tmp/ln.cu
CUDA=/usr/local/cuda
g++ -O2 -std=c++17 nvrtc_threads.cpp -I$CUDA/include -L$CUDA/lib64 -lnvrtc -lpthread -o /tmp/nvt && LD_LIBRARY_PATH=$CUDA/lib64 /tmp/nvt /tmp/gelu.cu /tmp/ln.cu
g++ -O2 -std=c++17 nvrtc_fork.cpp -I$CUDA/include -L$CUDA/lib64 -lnvrtc -ldl -lpthread -o /tmp/nvf && LD_LIBRARY_PATH=$CUDA/lib64 /tmp/nvf /tmp/gelu.cu /tmp/ln.cu
nproc; grep "model name" /proc/cpuinfo | head -1
for m in mobilenet_v3_small efficientnet_b0; do for h in serial 16 serial 4; do python3 cudnn_first.py $m $h 2>&1 | tail -1; done; done
# The same first calls by layout, API and module loading (one fresh process each).
for m in mobilenet_v3_small efficientnet_b0; do
  python3 cudnn_first.py $m serial 2>&1 | tail -1; python3 cudnn_first.py $m serial nchw 2>&1 | tail -1
  TORCH_CUDNN_V8_API_DISABLED=1 python3 cudnn_first.py $m serial 2>&1 | tail -1
  CUDA_MODULE_LOADING=EAGER python3 cudnn_first.py $m serial 2>&1 | tail -1
done
# What CUPTI costs a CUDA graph's replay by way of recording, and whether graph-level records survive a graph
# instantiated before them (the README's CUPTI paragraph).
$CUDA/bin/nvcc -O2 -std=c++17 -arch=sm_90 cupti_graph.cu -I$CUDA/include -L$CUDA/lib64 -lcupti -o /tmp/cg && LD_LIBRARY_PATH=$CUDA/lib64 /tmp/cg

# What timing cuBLASLt's candidate algorithms buys each linear of the benchmark's models over cuBLAS's default
# choice (the README's GEMM paragraph).
$CUDA/bin/nvcc -O2 -std=c++17 -arch=sm_90 cublaslt_algos.cu -I$CUDA/include -L$CUDA/lib64 -lcublasLt -lcublas -o /tmp/lt && LD_LIBRARY_PATH=$CUDA/lib64 /tmp/lt

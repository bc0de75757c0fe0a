// How a depthwise convolution's generated kernel (NHWC, float32, its batch norm and SiLU inside, one output per
// thread as Kiln's CUDA backend writes it) spends its time, and what changes to its index arithmetic and work per
// thread buy, on EfficientNet-B0's depthwise layers at batch 8. Each variant is checked against the first.
//   wrap:     a padded tap reads a wrapped index ((at + shift) % size) under its condition (Kiln's form today)
//   clamp:    the index clamped into the input (min/max) instead of wrapped
//   hoist:    clamped, every tap loaded unconditionally, the condition selects (loads free to be scheduled early)
//   rowsN:    hoisted, N outputs along the width per thread sharing their taps' loads
//   interior: outputs whose window lies inside the input take a branch without conditions
//   c4rN:     4 neighbouring channels per thread as float4 loads and stores (input, weights, batch norm), and N
//             outputs along the width (1, 2, 4, or 7: a 7x7 map's whole row)
// Time per kernel: a CUDA graph of 50 launches replayed, median of 7 (device time, no launch gaps).
//   nvcc -O3 -std=c++17 -arch=sm_90 window_kernels.cu -o /tmp/wk && /tmp/wk
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { auto e_ = (x); if (e_ != cudaSuccess) { std::printf("%s:%d %s -> %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

enum Variant { Wrap, Clamp, Hoist, Rows2, Rows4, Interior, C4R1, C4R2, C4R4, C4R7, kVariants };
static const char* kNames[] = {"wrap", "clamp", "hoist", "rows2", "rows4", "interior", "c4r1", "c4r2", "c4r4", "c4r7"};

struct Params { const float *x, *w, *mean, *var, *gamma, *beta; float* y; };

__device__ __forceinline__ float epilogue(float acc, const Params& p, int c) {
  const float v = (acc - p.mean[c]) * rsqrtf(p.var[c] + 1e-5f) * p.gamma[c] + p.beta[c];
  return v * __fdividef(1.0f, 1.0f + expf(-v));
}

template <int N, int C, int H, int W, int K, int S, int V>
__global__ void window(Params p) {
  constexpr int P = K / 2, OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  constexpr int T = V == Rows2 ? 2 : V == Rows4 ? 4 : 1;
  constexpr int OWG = (OW + T - 1) / T;
  constexpr int total = N * OH * OWG * C;
  for (int flat = blockIdx.x * blockDim.x + threadIdx.x; flat < total; flat += gridDim.x * blockDim.x) {
    const int c = flat % C, q1 = flat / C, g = q1 % OWG, q2 = q1 / OWG, oh = q2 % OH, n = q2 / OH;
    const float* xb = p.x + n * H * W * C + c;
    if constexpr (T == 1) {
      const int ow = g;
      float acc = 0;
      if constexpr (V == Interior) {
        const int h0 = oh * S - P, w0 = ow * S - P;
        if (h0 >= 0 && h0 + K <= H && w0 >= 0 && w0 + K <= W) {
#pragma unroll
          for (int kh = 0; kh < K; ++kh)
#pragma unroll
            for (int kw = 0; kw < K; ++kw) acc += xb[((h0 + kh) * W + w0 + kw) * C] * p.w[(kh * K + kw) * C + c];
          p.y[((n * OH + oh) * OW + ow) * C + c] = epilogue(acc, p, c);
          continue;
        }
      }
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        const int ih = oh * S - P + kh;
        const bool hok = -1 < ih && ih < H;
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          const int iw = ow * S - P + kw;
          const bool ok = hok && -1 < iw && iw < W;
          const float wt = p.w[(kh * K + kw) * C + c];
          if constexpr (V == Wrap || V == Interior) {
            const int hh = (ih + ((P + H - 1) / H * H > H ? (P + H - 1) / H * H : H)) % H;
            const int ww = (iw + ((P + W - 1) / W * W > W ? (P + W - 1) / W * W : W)) % W;
            acc += ok ? xb[(hh * W + ww) * C] * wt : 0.0f;
          } else if constexpr (V == Clamp) {
            const int hh = min(max(ih, 0), H - 1), ww = min(max(iw, 0), W - 1);
            acc += ok ? xb[(hh * W + ww) * C] * wt : 0.0f;
          } else {  // Hoist
            const int hh = min(max(ih, 0), H - 1), ww = min(max(iw, 0), W - 1);
            const float v = __ldg(xb + (hh * W + ww) * C);
            acc += ok ? v * wt : 0.0f;
          }
        }
      }
      p.y[((n * OH + oh) * OW + ow) * C + c] = epilogue(acc, p, c);
    } else {
      // T outputs ow0 .. ow0+T-1 read input columns ow0*S - P .. ow0*S - P + (T-1)*S + K-1.
      constexpr int SPAN = (T - 1) * S + K;
      const int ow0 = g * T;
      float acc[T] = {};
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        const int ih = oh * S - P + kh;
        const bool hok = -1 < ih && ih < H;
        const int hh = min(max(ih, 0), H - 1);
        float row[SPAN];
#pragma unroll
        for (int j = 0; j < SPAN; ++j) {
          const int iw = ow0 * S - P + j;
          const bool ok = hok && -1 < iw && iw < W;
          const float v = __ldg(xb + (hh * W + min(max(iw, 0), W - 1)) * C);
          row[j] = ok ? v : 0.0f;
        }
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          const float wt = p.w[(kh * K + kw) * C + c];
#pragma unroll
          for (int t = 0; t < T; ++t) acc[t] += row[t * S + kw] * wt;
        }
      }
#pragma unroll
      for (int t = 0; t < T; ++t)
        if (ow0 + t < OW) p.y[((n * OH + oh) * OW + ow0 + t) * C + c] = epilogue(acc[t], p, c);
    }
  }
}

__device__ __forceinline__ float4 ld4(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
__device__ __forceinline__ float lane(const float4& v, int l) { return l == 0 ? v.x : l == 1 ? v.y : l == 2 ? v.z : v.w; }

// 4 channels x T outputs along the width per thread, every load and store a float4 (C a multiple of 4).
template <int N, int C, int H, int W, int K, int S, int T>
__global__ void window4(Params p) {
  constexpr int P = K / 2, OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  constexpr int OWG = (OW + T - 1) / T, C4 = C / 4, SPAN = (T - 1) * S + K;
  constexpr int total = N * OH * OWG * C4;
  for (int flat = blockIdx.x * blockDim.x + threadIdx.x; flat < total; flat += gridDim.x * blockDim.x) {
    const int c = (flat % C4) * 4, q1 = flat / C4, g = q1 % OWG, q2 = q1 / OWG, oh = q2 % OH, n = q2 / OH;
    const float* xb = p.x + n * H * W * C + c;
    const int ow0 = g * T;
    float4 acc[T];
#pragma unroll
    for (int t = 0; t < T; ++t) acc[t] = make_float4(0, 0, 0, 0);
#pragma unroll
    for (int kh = 0; kh < K; ++kh) {
      const int ih = oh * S - P + kh;
      const bool hok = -1 < ih && ih < H;
      const int hh = min(max(ih, 0), H - 1);
      float4 row[SPAN];
#pragma unroll
      for (int j = 0; j < SPAN; ++j) {
        const int iw = ow0 * S - P + j;
        const bool ok = hok && -1 < iw && iw < W;
        const float4 v = ld4(xb + (hh * W + min(max(iw, 0), W - 1)) * C);
        row[j] = ok ? v : make_float4(0, 0, 0, 0);
      }
#pragma unroll
      for (int kw = 0; kw < K; ++kw) {
        const float4 wt = ld4(p.w + (kh * K + kw) * C + c);
#pragma unroll
        for (int t = 0; t < T; ++t) {
          acc[t].x += row[t * S + kw].x * wt.x;
          acc[t].y += row[t * S + kw].y * wt.y;
          acc[t].z += row[t * S + kw].z * wt.z;
          acc[t].w += row[t * S + kw].w * wt.w;
        }
      }
    }
    const float4 mean = ld4(p.mean + c), var = ld4(p.var + c), gamma = ld4(p.gamma + c), beta = ld4(p.beta + c);
#pragma unroll
    for (int t = 0; t < T; ++t) {
      if (ow0 + t >= OW) continue;
      float o[4];
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const float v = (lane(acc[t], l) - lane(mean, l)) * rsqrtf(lane(var, l) + 1e-5f) * lane(gamma, l) + lane(beta, l);
        o[l] = v * __fdividef(1.0f, 1.0f + expf(-v));
      }
      *reinterpret_cast<float4*>(p.y + ((n * OH + oh) * OW + ow0 + t) * C + c) = make_float4(o[0], o[1], o[2], o[3]);
    }
  }
}

template <int N, int C, int H, int W, int K, int S>
static void layer(cudaStream_t s, int threads) {
  constexpr int P = K / 2, OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  const size_t in = size_t(N) * H * W * C, out = size_t(N) * OH * OW * C;
  std::vector<float> h(in + K * K * C + 4 * C);  // buffers 16-byte aligned: every size is a multiple of 4 floats
  srand(1);
  for (auto& v : h) v = float(rand()) / RAND_MAX - 0.5f;
  for (int c = 0; c < C; ++c) h[in + K * K * C + C + c] += 1.0f;  // variance > 0
  float *dx, *dy;
  CK(cudaMalloc(&dx, h.size() * 4));
  CK(cudaMalloc(&dy, out * 4 * kVariants));
  CK(cudaMemcpy(dx, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  const float* w = dx + in;
  std::printf("C%-5d %3dx%-3d k%d s%d  %7.2f MB |", C, H, W, K, S, (in + out) * 4 / 1e6);
  std::vector<float> ref(out), got(out);
  for (int v = 0; v < kVariants; ++v) {
    Params p{dx, w, w + K * K * C, w + K * K * C + C, w + K * K * C + 2 * C, w + K * K * C + 3 * C, dy + v * out};
    void (*fn)(Params) = nullptr;
    switch (v) {
      case Wrap: fn = window<N, C, H, W, K, S, Wrap>; break;
      case Clamp: fn = window<N, C, H, W, K, S, Clamp>; break;
      case Hoist: fn = window<N, C, H, W, K, S, Hoist>; break;
      case Rows2: fn = window<N, C, H, W, K, S, Rows2>; break;
      case Rows4: fn = window<N, C, H, W, K, S, Rows4>; break;
      case C4R1: fn = window4<N, C, H, W, K, S, 1>; break;
      case C4R2: fn = window4<N, C, H, W, K, S, 2>; break;
      case C4R4: fn = window4<N, C, H, W, K, S, 4>; break;
      case C4R7: fn = window4<N, C, H, W, K, S, 7>; break;
      default: fn = window<N, C, H, W, K, S, Interior>; break;
    }
    const int T = v == Rows2 || v == C4R2 ? 2 : v == Rows4 || v == C4R4 ? 4 : v == C4R7 ? 7 : 1;
    const long work = long(N) * OH * ((OW + T - 1) / T) * (v >= C4R1 ? C / 4 : C);
    const int blocks = int(std::min<long>((work + threads - 1) / threads, 65535L * 64));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 50; ++i) fn<<<blocks, threads, 0, s>>>(p);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> ms;
    for (int r = 0; r < 7; ++r) {
      cudaEventRecord(a, s);
      CK(cudaGraphLaunch(ge, s));
      cudaEventRecord(b, s);
      CK(cudaEventSynchronize(b));
      float t = 0;
      cudaEventElapsedTime(&t, a, b);
      ms.push_back(t / 50);
    }
    std::sort(ms.begin(), ms.end());
    CK(cudaMemcpy(v == 0 ? ref.data() : got.data(), dy + v * out, out * 4, cudaMemcpyDeviceToHost));
    double err = 0;
    if (v) for (size_t i = 0; i < out; ++i) err = std::max(err, double(std::fabs(ref[i] - got[i])));
    std::printf(" %s %6.2f us%s", kNames[v], ms[3] * 1e3, err > 1e-4 ? " WRONG" : "");
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
  }
  std::printf("\n");
  cudaFree(dx);
  cudaFree(dy);
}

int main(int argc, char** argv) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int threads : {256, 128}) {
    std::printf("threads per block %d\n", threads);
    layer<8, 32, 112, 112, 3, 1>(s, threads);
    layer<8, 96, 112, 112, 3, 2>(s, threads);
    layer<8, 144, 56, 56, 3, 1>(s, threads);
    layer<8, 144, 56, 56, 5, 2>(s, threads);
    layer<8, 240, 28, 28, 5, 1>(s, threads);
    layer<8, 240, 28, 28, 3, 2>(s, threads);
    layer<8, 480, 14, 14, 3, 1>(s, threads);
    layer<8, 480, 14, 14, 5, 1>(s, threads);
    layer<8, 672, 14, 14, 5, 1>(s, threads);
    layer<8, 672, 14, 14, 5, 2>(s, threads);
    layer<8, 1152, 7, 7, 5, 1>(s, threads);
    layer<8, 1152, 7, 7, 3, 1>(s, threads);
  }
  return 0;
}

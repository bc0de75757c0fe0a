#include "engine/codegen/cuda/emit_cuda.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "engine/codegen/cuda/kernel_mapping.h"
#include "engine/codegen/kernel_expr.h"

namespace kiln::codegen {

using fusion::FusedKernel;

namespace {

// `decl` (declare_buffers' lines over the region's "args.buf[c]") with each region buffer index c
// replaced by its position in `buffers`, which collects them in order of first appearance.
std::string own_buffer_indices(const std::string& decl, std::vector<int>& buffers) {
  static const std::string key = "args.buf[";
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = decl.find(key, at)) != std::string::npos;) {
    const size_t digits = hit + key.size();
    size_t end = digits;
    while (end < decl.size() && decl[end] >= '0' && decl[end] <= '9') ++end;
    out.append(decl, at, digits - at);
    if (end == digits || end >= decl.size() || decl[end] != ']') {
      at = digits;
      continue;
    }
    const int c = std::stoi(decl.substr(digits, end - digits));
    auto pos = std::find(buffers.begin(), buffers.end(), c);
    if (pos == buffers.end()) pos = buffers.insert(buffers.end(), c);
    out += std::to_string(pos - buffers.begin());
    at = end;
  }
  out.append(decl, at, std::string::npos);
  return out;
}

const char* ctype(ir::DType t) {
  switch (t) {
    case ir::DType::Float64: return "double";
    case ir::DType::Int64: return "long long";
    case ir::DType::Int32: return "int";
    case ir::DType::Int16: return "short";
    case ir::DType::Int8: return "signed char";
    case ir::DType::UInt8: return "unsigned char";
    case ir::DType::Bool: return "bool";
    case ir::DType::Float16: return "kiln_half";
    case ir::DType::BFloat16: return "kiln_bf16";
    default: return "float";
  }
}

// 16-bit floats: their bits, converted by the hardware (round to nearest even); math stays float32.
const char* kHalfTypes =
    "struct kiln_half {\n"
    "  unsigned short bits;\n"
    "  kiln_half() = default;\n"
    "  __device__ kiln_half(float f) { asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(bits) : \"f\"(f)); }\n"
    "  __device__ operator float() const { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(bits)); return f; }\n"
    "};\n"
    "struct kiln_bf16 {\n"
    "  unsigned short bits;\n"
    "  kiln_bf16() = default;\n"
    "  __device__ kiln_bf16(float f) { asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(bits) : \"f\"(f)); }\n"
    "  __device__ operator float() const { return __uint_as_float(static_cast<unsigned>(bits) << 16); }\n"
    "};\n\n";

struct CudaEmitter : KernelExpr {
  using KernelExpr::KernelExpr;



  // Decomposes a flat index into the loop variables of `sizes`, first var `first`: row-major, or
  // along `order` (a storage order, outermost first) so consecutive flat indices walk memory.
  void unflatten(std::ostringstream& os, const std::string& flat, const std::vector<Sym>& sizes, size_t first,
                 const std::string& pad, std::vector<std::string>& vars, std::vector<int> order = {}) {
    if (order.empty())
      for (size_t d = 0; d < sizes.size(); ++d) order.push_back(static_cast<int>(d));
    std::string rest = flat;
    for (size_t j = order.size(); j-- > 0;) {
      const size_t d = static_cast<size_t>(order[j]);
      std::string v = "i" + std::to_string(first + d);
      if (j == 0) os << pad << "const long long " << v << " = " << rest << ";\n";
      else {
        os << pad << "const long long " << v << " = " << rest << " % " << size(sizes[d]) << ";\n";
        os << pad << "const long long q" << first + d << " = " << rest << " / " << size(sizes[d]) << ";\n";
        rest = "q" + std::to_string(first + d);
      }
    }
    for (size_t d = 0; d < sizes.size(); ++d) {
      vars.push_back("i" + std::to_string(first + d));
      set_extent(vars.back(), sizes[d]);  // flat < total: each variable stays below its size
    }
  }

  // The loop body for one element: every computation of the kernel in order, stored to its buffer.
  void element(std::ostringstream& os, const FusedKernel& k, const std::vector<std::string>& vars,
               const std::string& pad) {
    store_each(os, k.comps, vars, pad);
  }

  // Buffers of kernel k that the vector path moves `width` elements at a time: float32 (16 bytes
  // for 4) and 16-bit float (8 bytes for 4) computations of the iteration's own shape, read (or
  // written) at the element's own position.
  std::set<int> vector_buffers(const FusedKernel& k, const std::vector<Sym>& sizes) {
    std::set<int> out;
    const auto order = lowering::storage_order(p.program.comps[k.comps[0]]);
    std::vector<std::string> probe;
    for (size_t d = 0; d < sizes.size(); ++d) {
      probe.push_back("i" + std::to_string(d));
      set_extent(probe.back(), sizes[d]);
    }
    std::vector<lowering::IExpr> ident;
    for (size_t d = 0; d < sizes.size(); ++d) ident.push_back(lowering::ie_var(static_cast<int>(d)));
    auto same_shape = [&](int c) {
      const auto& cs = p.program.comps[c].sizes;
      if (cs.size() != sizes.size()) return false;
      for (size_t d = 0; d < cs.size(); ++d)
        if (size(cs[d]) != size(sizes[d])) return false;
      const ir::DType t = p.program.comps[c].dtype;
      return (t == ir::DType::Float32 || t == ir::DType::Float16 || t == ir::DType::BFloat16) && p.realized[c] &&
             lowering::storage_order(p.program.comps[c]) == order;
    };
    std::set<int> rejected;
    std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
      if (!e) return;
      if (e->op == VExprNode::Op::Load) {
        bool ok = same_shape(e->comp) && offset(e->comp, e->index, probe) == offset(e->comp, ident, probe);
        (ok ? out : rejected).insert(e->comp);
      }
      walk(e->a);
      walk(e->b);
      walk(e->c);
    };
    for (int c : k.comps) {
      walk(p.program.comps[c].body);
      if (same_shape(c)) out.insert(c);
      else rejected.insert(c);
    }
    for (int c : rejected) out.erase(c);  // read elsewhere at another position: stays scalar
    return out;
  }

  // The flat index walks the storage order of the kernel's first computation (channels-last
  // kernels run with the channel innermost), so its own buffers are read and written in order.
  void pointwise(std::ostringstream& os, const FusedKernel& k, int width) {
    const auto& sizes = p.program.comps[k.comps[0]].sizes;
    const auto& layout = p.program.comps[k.comps[0]].layout;
    const int inner = layout.empty() ? static_cast<int>(sizes.size()) - 1 : layout.back();
    std::string total = size_product(sizes);
    os << "  const long long total = " << total << ";\n";
    if (width == 1) {
      os << "  for (long long flat = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; flat < total; flat += "
            "static_cast<long long>(gridDim.x) * blockDim.x) {\n";
      std::vector<std::string> vars;
      unflatten(os, "flat", sizes, 0, "    ", vars, layout);
      element(os, k, vars, "    ");
      os << "  }\n";
      return;
    }
    // `width` consecutive elements per thread: the innermost stored size is a multiple of width, so they
    // share every index but the innermost, and (when every vector buffer is aligned to its vector's
    // size) each buffer read or written at the element's own position moves as one vector of `width`
    // elements. A thread's first element sits at a multiple of `width`, so the vector must be exactly
    // `width` elements wide: a float4 load at a multiple of 2 faults.
    std::set<int> vec = (width == 4 || width == 2) ? vector_buffers(k, sizes) : std::set<int>{};
    // Each vector buffer moves as one `width`-element vector of its own type: float4 / float2 for
    // float32, uint2 / unsigned (8 / 4 bytes) for the 16-bit floats, whose elements are read and
    // written through their kiln_half / kiln_bf16 bits.
    auto wide = [&](int c) { return p.program.comps[c].dtype == ir::DType::Float32; };
    auto vtype = [&](int c) { return wide(c) ? (width == 4 ? "float4" : "float2") : (width == 4 ? "uint2" : "unsigned"); };
    auto vbytes = [&](int c) { return (wide(c) ? 4 : 2) * width; };
    std::set<int> own(k.comps.begin(), k.comps.end());
    os << "  // " << width << " consecutive elements per thread (the innermost size is a multiple of " << width << ")\n";
    if (!vec.empty()) {
      std::map<int, std::string> by_size;  // vector bytes -> the buffers' addresses or'ed
      for (int c : vec) {
        std::string& addrs = by_size[vbytes(c)];
        addrs += (addrs.empty() ? "" : " | ") + std::string("reinterpret_cast<unsigned long long>(b") + std::to_string(c) + ")";
      }
      std::string test;
      for (const auto& [bytes, addrs] : by_size)
        test += (test.empty() ? "" : " | ") + std::string("(") + addrs + ") & " + std::to_string(bytes - 1) + "ULL";
      if (by_size.size() == 1)
        os << "  const bool aligned = (" << test << ") == 0;  // every vector buffer " << by_size.begin()->first
           << "-byte aligned\n";
      else
        os << "  const bool aligned = (" << test << ") == 0;  // every vector buffer aligned to its vector's size\n";
    }
    os << "  for (long long base = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * " << width
       << "; base < total; base += static_cast<long long>(gridDim.x) * blockDim.x * " << width << ") {\n";
    std::vector<std::string> vars;
    unflatten(os, "base", sizes, 0, "    ", vars, layout);
    std::vector<std::string> lane_vars = vars;
    if (!lane_vars.empty()) {
      lane_vars[inner] = "(" + vars[inner] + " + lane)";
      set_extent(lane_vars[inner], sizes[static_cast<size_t>(inner)]);  // the lanes stay inside the innermost size
    }
    if (!vec.empty()) {
      os << "    if (aligned) {\n";
      for (int c : vec)
        if (!own.count(c))
          os << "      const " << vtype(c) << " v" << c << " = *reinterpret_cast<const " << vtype(c) << "*>(b" << c << " + base);  // "
             << cpp_comment(p.program.comps[c].name) << "\n";
      for (int c : k.comps)
        if (vec.count(c)) os << "      " << vtype(c) << " v" << c << ";\n";
      os << "      #pragma unroll\n      for (int lane = 0; lane < " << width << "; ++lane) {\n";
      auto element_of = [&](int c, bool constant) {
        const std::string t = wide(c) ? "float" : ctype(p.program.comps[c].dtype);
        return "reinterpret_cast<" + std::string(constant ? "const " : "") + t + "*>(&v" + std::to_string(c) + ")[lane]";
      };
      load_hook = [&](const VExpr& e, const std::vector<std::string>&) -> std::string {
        if (!vec.count(e->comp)) return "";
        return wide(e->comp) ? element_of(e->comp, true) : "static_cast<float>(" + element_of(e->comp, true) + ")";
      };
      for (int c : k.comps) {
        const Comp& comp = p.program.comps[c];
        std::string v = statement(os, "        ", comp.body, lane_vars, {}, 0, &comp);
        if (vec.count(c)) {
          os << "        " << element_of(c, false) << " = " << v << ";  // " << cpp_comment(comp.name) << "\n";
        } else {
          std::vector<lowering::IExpr> idx;
          for (size_t d = 0; d < comp.sizes.size(); ++d) idx.push_back(lowering::ie_var(static_cast<int>(d)));
          os << "        b" << c << "[" << offset(c, idx, lane_vars) << "] = " << v << ";  // " << cpp_comment(comp.name) << "\n";
        }
      }
      load_hook = nullptr;
      os << "      }\n";
      for (int c : k.comps)
        if (vec.count(c)) os << "      *reinterpret_cast<" << vtype(c) << "*>(b" << c << " + base) = v" << c << ";\n";
      os << "      continue;\n    }\n";
    }
    os << "    #pragma unroll\n    for (int lane = 0; lane < " << width << "; ++lane) {\n";
    element(os, k, lane_vars, "      ");
    os << "    }\n  }\n";
  }

  // A transposing kernel (transpose_vars) in 32x32 tiles: the block computes a tile's values with
  // the input's contiguous variable fastest across its threads, keeps them in shared memory, and
  // stores them with the output's innermost variable fastest, so both sides move whole sectors.
  // Tiles are taken grid-stride; any block size works (each thread covers 1024 / blockDim cells).
  void transpose(std::ostringstream& os, const FusedKernel& k, const TransposeVars& tv) {
    const int c = k.comps[0];
    const Comp& comp = p.program.comps[c];
    const size_t rank = comp.sizes.size();
    const int64_t n_in = comp.sizes[tv.in]->value, n_out = comp.sizes[tv.out]->value;
    const int64_t tiles_in = (n_in + 31) / 32, tiles_out = (n_out + 31) / 32;
    std::vector<Sym> others;
    std::vector<int> other_dims;
    for (size_t d = 0; d < rank; ++d)
      if (static_cast<int>(d) != tv.in && static_cast<int>(d) != tv.out) {
        others.push_back(comp.sizes[d]);
        other_dims.push_back(static_cast<int>(d));
      }
    const std::string vin = "i" + std::to_string(tv.in), vout = "i" + std::to_string(tv.out);
    os << "  // a transpose: 32x32 tiles through shared memory, read along " << vin << " and written along " << vout << "\n";
    os << "  __shared__ float tile[32][33];\n";
    os << "  const long long tiles = " << size_product(others) << " * " << tiles_in << "LL * " << tiles_out << "LL;\n";
    os << "  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {\n";
    os << "    const long long t_in = t % " << tiles_in << "LL, t_rest = t / " << tiles_in << "LL;\n";
    os << "    const long long t_out = t_rest % " << tiles_out << "LL, rest = t_rest / " << tiles_out << "LL;\n";
    // The other dims from `rest`, row-major, each named after its own dim.
    std::vector<std::string> vars(rank);
    std::string rest = "rest";
    for (size_t j = other_dims.size(); j-- > 0;) {
      const std::string d = std::to_string(other_dims[j]);
      if (j == 0) {
        os << "    const long long i" << d << " = " << rest << ";\n";
      } else {
        os << "    const long long i" << d << " = " << rest << " % " << size(others[j]) << ";\n";
        os << "    const long long q" << d << " = " << rest << " / " << size(others[j]) << ";\n";
        rest = "q" + d;
      }
      vars[static_cast<size_t>(other_dims[j])] = "i" + d;
      set_extent("i" + d, others[j]);
    }
    vars[static_cast<size_t>(tv.in)] = vin;
    vars[static_cast<size_t>(tv.out)] = vout;
    set_extent(vin, comp.sizes[tv.in]);
    set_extent(vout, comp.sizes[tv.out]);
    os << "    for (int e = threadIdx.x; e < 1024; e += blockDim.x) {\n";
    os << "      const long long " << vin << " = t_in * 32 + (e & 31), " << vout << " = t_out * 32 + (e >> 5);\n";
    os << "      if (" << vin << " < " << n_in << "LL && " << vout << " < " << n_out << "LL) {\n";
    std::string v = statement(os, "        ", comp.body, vars, {}, 0, &comp);
    os << "        tile[e >> 5][e & 31] = " << v << ";\n      }\n    }\n    __syncthreads();\n";
    os << "    for (int e = threadIdx.x; e < 1024; e += blockDim.x) {\n";
    os << "      const long long " << vout << " = t_out * 32 + (e & 31), " << vin << " = t_in * 32 + (e >> 5);\n";
    std::vector<lowering::IExpr> idx;
    for (size_t d = 0; d < rank; ++d) idx.push_back(lowering::ie_var(static_cast<int>(d)));
    os << "      if (" << vin << " < " << n_in << "LL && " << vout << " < " << n_out << "LL) b" << c << "["
       << offset(c, idx, vars) << "] = tile[e & 31][e >> 5];  // " << cpp_comment(comp.name) << "\n";
    os << "    }\n    __syncthreads();\n  }\n";
  }

  // Structural equality of value expressions (index expressions: lowering::ie_equal): the one-pass
  // forms below need to know that two reductions read the very same values.
  bool same_value(const VExpr& a, const VExpr& b) {
    if (a == b) return true;
    if (!a || !b || a->op != b->op || a->fn != b->fn || a->is_bool != b->is_bool) return false;
    switch (a->op) {
      case VExprNode::Op::Const: return a->value == b->value || (a->value != a->value && b->value != b->value);
      case VExprNode::Op::Scalar: return a->scalar == b->scalar;
      case VExprNode::Op::Load:
        if (a->comp != b->comp || a->index.size() != b->index.size()) return false;
        for (size_t d = 0; d < a->index.size(); ++d)
          if (!lowering::ie_equal(a->index[d], b->index[d])) return false;
        return true;
      default: break;
    }
    if (lowering::ve_is_index_fn(*a)) {
      if (a->index.size() != b->index.size()) return false;
      for (size_t d = 0; d < a->index.size(); ++d)
        if (!lowering::ie_equal(a->index[d], b->index[d])) return false;
      return true;
    }
    return same_value(a->a, b->a) && same_value(a->b, b->b) && same_value(a->c, b->c);
  }
  bool same_sizes(const std::vector<Sym>& a, const std::vector<Sym>& b) {
    return size_product(a) == size_product(b);
  }
  // e is a Load of reduction c at the row's own index (vars 0..outer-1).
  static bool row_load(const VExpr& e, int c, size_t outer) {
    if (!e || e->op != VExprNode::Op::Load || e->comp != c || e->index.size() != outer) return false;
    for (size_t d = 0; d < outer; ++d)
      if (e->index[d]->op != IExprNode::Op::Var || e->index[d]->var != static_cast<int>(d)) return false;
    return true;
  }

  // Two reductions of a row kernel that one loop over the row can compute together, read off the
  // loop IR as the decompositions (decompose_reductions.cpp) leave it after fusion's inlining:
  //   Online: M = max(E), then S = sum(exp(E - M[row]))         softmax, log_softmax
  //   Welford: A = mean(E), then B = mean((E - A[row]) * (E - A[row]))   layer_norm
  //            (or B = mean(pow(E - A[row], 2)): a variance written out by hand)
  // with E the same expression in both (so it cannot read the first reduction), B and S right
  // after A and M over the same reduced sizes, and the means dividing by the row length. Anything
  // else keeps one loop per reduction. Results agree with the two loops to float32 rounding, a few
  // ulp relative: the online sum picks up a rescale (expf, 2 ulp) each time a thread's max grows;
  // Welford runs on the values minus the row's first one, so its mean and variance stay within a
  // few ulp (of the spread, for the mean) however far the mean sits from 0, while a thread folds up
  // to a few hundred values (about 100 ulp at a thousand and more per thread: rows of 10^5 or so).
  // NaN, all -inf and empty rows give what the two loops give, except that a row holding +-inf
  // may get a NaN mean where the sum gave +-inf (its variance and normalized values are NaN
  // either way).
  enum class RowPass { Separate, Online, Welford };
  RowPass row_pass(const FusedKernel& k, size_t i) {
    if (i + 1 >= k.comps.size()) return RowPass::Separate;
    const int c = k.comps[i];
    const Comp& first = p.program.comps[c];
    const Comp& second = p.program.comps[k.comps[i + 1]];
    const size_t outer = k.outer.size();
    if (first.kind != Comp::Kind::Reduction || second.kind != Comp::Kind::Reduction) return RowPass::Separate;
    if (first.reduce_sizes.empty() || first.reduce_sizes.size() != second.reduce_sizes.size() ||
        !same_sizes(first.reduce_sizes, second.reduce_sizes) || first.sizes.size() != outer ||
        second.sizes.size() != outer || !same_sizes(first.sizes, k.outer) || !same_sizes(second.sizes, k.outer))
      return RowPass::Separate;
    const VExpr& body = second.body;
    if (first.reduce_op == "max" && second.reduce_op == "sum" && first.post_div_sizes.empty() &&
        second.post_div_sizes.empty() && body->op == VExprNode::Op::Unary && body->fn == "exp" &&
        body->a->op == VExprNode::Op::Binary && body->a->fn == "sub" && row_load(body->a->b, c, outer) &&
        same_value(body->a->a, first.body))
      return RowPass::Online;
    auto mean_of_row = [&](const Comp& r) {
      return r.reduce_op == "sum" && !r.post_div_sizes.empty() && same_sizes(r.post_div_sizes, r.reduce_sizes);
    };
    auto centered = [&](const VExpr& d) {  // E - A[row]
      return d && d->op == VExprNode::Op::Binary && d->fn == "sub" && row_load(d->b, c, outer) &&
             same_value(d->a, first.body);
    };
    if (mean_of_row(first) && mean_of_row(second) && body->op == VExprNode::Op::Binary &&
        ((body->fn == "mul" && centered(body->a) && same_value(body->a, body->b)) ||
         (body->fn == "pow" && centered(body->a) && body->b->op == VExprNode::Op::Const && body->b->value == 2.0)))
      return RowPass::Welford;
    return RowPass::Separate;
  }

  // A row value held in registers by the warp form: the load of computation `comp` at `index`
  // (over the row's variables), one float per lane and step along the row in array `name`.
  struct HeldLoad {
    int comp;
    std::vector<lowering::IExpr> index;
    std::string name;
  };

  // Whether kernel k's warp form keeps the row's values in registers, and which loads: every loop
  // of the row (reductions and the per-element computations after them) walks the same constant
  // shape, so lane l's j-th step is element l + 32 j in each of them, and a value the reductions
  // read is read from memory once per row instead of once per loop. Held are the loads of the
  // reductions' bodies from buffers this kernel does not write, at positions along the row, outside
  // a where's branches (those may not be readable for every element); up to 64 floats per lane.
  // Empty when any loop differs in shape or nothing qualifies: the loops then read memory.
  std::vector<HeldLoad> held_loads(const FusedKernel& k, std::vector<Sym>& shape, int64_t& per_lane) {
    const size_t outer = k.outer.size();
    bool first = true;
    for (int c : k.comps) {
      const Comp& comp = p.program.comps[c];
      std::vector<Sym> loop = comp.kind == Comp::Kind::Reduction
                                  ? comp.reduce_sizes
                                  : std::vector<Sym>(comp.sizes.begin() + std::min(comp.sizes.size(), outer), comp.sizes.end());
      if (loop.empty()) return {};
      for (const auto& s : loop)
        if (!capture::sym_is_const(s) || s->value <= 0) return {};
      if (first) shape = loop;
      first = false;
      if (loop.size() != shape.size()) return {};
      for (size_t d = 0; d < loop.size(); ++d)
        if (loop[d]->value != shape[d]->value) return {};
    }
    int64_t length = 1;
    for (const auto& s : shape) length *= s->value;
    per_lane = (length + 31) / 32;
    if (per_lane > 32) return {};
    const std::set<int> own(k.comps.begin(), k.comps.end());
    std::function<bool(const lowering::IExpr&)> along_row = [&](const lowering::IExpr& e) {
      if (!e) return false;
      if (e->op == IExprNode::Op::Var) return e->var >= static_cast<int>(outer);
      return along_row(e->a) || along_row(e->b);
    };
    std::vector<HeldLoad> held;
    std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
      if (!e) return;
      if (e->op == VExprNode::Op::Load) {
        const Comp& src = p.program.comps[e->comp];
        const bool floating = src.dtype == ir::DType::Float32 || src.dtype == ir::DType::Float16 ||
                              src.dtype == ir::DType::BFloat16;
        bool along = false;
        for (const auto& i : e->index) along = along || along_row(i);
        if (!own.count(e->comp) && p.realized[e->comp] && floating && along &&
            static_cast<int64_t>(held.size() + 1) * per_lane <= 64 && !find_held(held, e)) {
          held.push_back({e->comp, e->index, "rv" + std::to_string(held.size())});
        }
        return;
      }
      if (e->op == VExprNode::Op::Where) {  // its condition only: the branches are read lazily
        walk(e->c);
        return;
      }
      walk(e->a);
      walk(e->b);
      walk(e->c);
    };
    for (int c : k.comps)
      if (p.program.comps[c].kind == Comp::Kind::Reduction) walk(p.program.comps[c].body);
    return held;
  }
  static const HeldLoad* find_held(const std::vector<HeldLoad>& held, const VExpr& e) {
    for (const auto& h : held) {
      if (h.comp != e->comp || h.index.size() != e->index.size()) continue;
      bool same = true;
      for (size_t d = 0; d < h.index.size() && same; ++d) same = lowering::ie_equal(h.index[d], e->index[d]);
      if (same) return &h;
    }
    return nullptr;
  }

  // The warp form with the row in registers (held_loads): each lane first reads its share of every
  // held value, all loads in flight at once, then every loop over the row runs from registers,
  // unrolled; the reductions run one loop each (two passes over registers cost less than the
  // one-pass forms' per-value division or exp, and give the plain two-loop results).
  void register_row(std::ostringstream& os, const FusedKernel& k, const std::vector<HeldLoad>& held,
                    const std::vector<Sym>& shape, int64_t per_lane) {
    const size_t outer = k.outer.size();
    int64_t length = 1;
    for (const auto& s : shape) length *= s->value;
    const std::string n = std::to_string(per_lane);
    const bool ragged = length % 32 != 0;
    os << "  const long long rows = " << size_product(k.outer) << ";\n";
    os << "  for (long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; row < rows; "
          "row += (static_cast<long long>(gridDim.x) * blockDim.x) >> 5) {\n";
    std::vector<std::string> vars;
    unflatten(os, "row", k.outer, 0, "    ", vars);
    os << "    // the row in registers: " << per_lane << (per_lane == 1 ? " value" : " values")
       << " per lane of each held load, read once\n";
    for (const auto& h : held) os << "    float " << h.name << "[" << n << "];\n";
    // One unrolled loop over the lane's steps; `body` writes the step's statements.
    auto steps = [&](const std::function<void(const std::vector<std::string>&, const std::string&)>& body) {
      os << "    #pragma unroll\n    for (int j = 0; j < " << n << "; ++j) {\n";
      os << "      const long long r = (threadIdx.x & 31) + 32LL * j;\n";
      std::string pad = "      ";
      if (ragged) {
        os << "      if (r < " << length << "LL) {\n";
        pad = "        ";
      }
      std::vector<std::string> rvars = vars;
      unflatten(os, "r", shape, outer, pad, rvars);
      body(rvars, pad);
      if (ragged) os << "      }\n";
      os << "    }\n";
    };
    steps([&](const std::vector<std::string>& rvars, const std::string& pad) {
      for (const auto& h : held) {
        std::string v = statement(os, pad, lowering::ve_load(h.comp, h.index), rvars, {}, outer);
        os << pad << h.name << "[j] = " << v << ";  // " << cpp_comment(p.program.comps[h.comp].name) << "\n";
      }
    });
    load_hook = [&](const VExpr& e, const std::vector<std::string>&) -> std::string {
      const HeldLoad* h = find_held(held, e);
      return h ? h->name + "[j]" : "";
    };
    std::map<int, std::string> accs;
    std::vector<lowering::IExpr> row_idx;
    for (size_t d = 0; d < outer; ++d) row_idx.push_back(lowering::ie_var(static_cast<int>(d)));
    for (int c : k.comps) {
      const Comp& comp = p.program.comps[c];
      if (comp.kind == Comp::Kind::Reduction) {
        const std::string acc = "acc" + std::to_string(c);
        const std::string& op = comp.reduce_op;
        os << "    float " << acc << " = " << (op == "sum" ? "0.0f" : op == "max" ? "-INFINITY" : "INFINITY") << ";  // "
           << op << " for " << cpp_comment(comp.name) << "\n";
        steps([&](const std::vector<std::string>& rvars, const std::string& pad) {
          std::string v = statement(os, pad, comp.body, rvars, accs, outer);
          if (op == "sum") os << pad << acc << " += " << v << ";\n";
          else os << pad << acc << " = kiln_" << op << "(" << acc << ", " << v << ");\n";
        });
        os << "    " << acc << " = kiln_warp_" << op << "(" << acc << ");\n";
        if (!comp.post_div_sizes.empty())
          os << "    " << acc << " = " << acc << " / static_cast<float>(" << size_product(comp.post_div_sizes) << ");\n";
        os << "    if ((threadIdx.x & 31) == 0) b" << c << "[" << offset(c, row_idx, vars) << "] = " << acc << ";\n";
        accs[c] = acc;
      } else {
        steps([&](const std::vector<std::string>& rvars, const std::string& pad) {
          std::vector<lowering::IExpr> idx;
          for (size_t d = 0; d < comp.sizes.size(); ++d) idx.push_back(lowering::ie_var(static_cast<int>(d)));
          std::string v = statement(os, pad, comp.body, rvars, accs, outer, &comp);
          os << pad << "b" << c << "[" << offset(c, idx, rvars) << "] = " << v << ";  // " << cpp_comment(comp.name) << "\n";
        });
      }
    }
    load_hook = nullptr;
    os << "    __syncwarp();\n  }\n";
  }

  // One block per row (block reductions), or with `warp` one warp per row, blockDim/32 rows per
  // block (warp-shuffle reductions only: short rows do not idle most of a block).
  void row(std::ostringstream& os, const FusedKernel& k, bool warp = false) {
    if (warp) {
      std::vector<Sym> shape;
      int64_t per_lane = 0;
      auto held = held_loads(k, shape, per_lane);
      if (!held.empty()) {
        register_row(os, k, held, shape, per_lane);
        return;
      }
    }
    const std::string step = warp ? "32" : "blockDim.x";
    const std::string first = warp ? "(threadIdx.x & 31)" : "threadIdx.x";
    std::vector<RowPass> passes;
    for (size_t i = 0; i < k.comps.size(); ++i) passes.push_back(row_pass(k, i));
    if (!warp) {  // 33 floats per value the block reductions carry (a Welford merge carries three)
      int lanes = 1;
      for (RowPass pass : passes) lanes = std::max(lanes, pass == RowPass::Welford ? 3 : pass == RowPass::Online ? 2 : 1);
      os << "  __shared__ float smem[" << 33 * lanes << "];\n";
    }
    os << "  const long long rows = " << size_product(k.outer) << ";\n";
    if (warp)
      os << "  for (long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; row < rows; "
            "row += (static_cast<long long>(gridDim.x) * blockDim.x) >> 5) {\n";
    else
      os << "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n";
    std::vector<std::string> vars;
    unflatten(os, "row", k.outer, 0, "    ", vars);
    std::map<int, std::string> accs;
    std::vector<lowering::IExpr> row_idx;
    for (size_t d = 0; d < k.outer.size(); ++d) row_idx.push_back(lowering::ie_var(static_cast<int>(d)));
    auto store = [&](int c, const std::string& acc) {
      os << "    if (" << first << " == 0) b" << c << "[" << offset(c, row_idx, vars) << "] = " << acc << ";\n";
      accs[c] = acc;
    };
    for (size_t i = 0; i < k.comps.size(); ++i) {
      const int c = k.comps[i];
      const Comp& comp = p.program.comps[c];
      if (passes[i] != RowPass::Separate) {
        // One loop for reductions c and c2 (row_pass says which form): each thread folds its
        // share of the row into its state, the warp or block merges the states, and both
        // accumulators end as the two loops would leave them.
        const int c2 = k.comps[i + 1];
        const Comp& comp2 = p.program.comps[c2];
        const std::string acc = "acc" + std::to_string(c), acc2 = "acc" + std::to_string(c2), n = "n" + std::to_string(c);
        const std::string length = size_product(comp.reduce_sizes);
        // A row of symbolic length may be empty at run time; the two loops leave their identities then.
        bool maybe_empty = false;
        for (const auto& s : comp.reduce_sizes) maybe_empty |= !capture::sym_is_const(s) || s->value <= 0;
        const bool online = passes[i] == RowPass::Online;
        if (online) {
          os << "    // online softmax: max and sum in one pass\n"
             << "    float " << acc << " = -INFINITY;  // max for " << cpp_comment(comp.name) << "\n"
             << "    float " << acc2 << " = 0.0f;  // sum for " << cpp_comment(comp2.name) << "\n";
        } else {
          os << "    // welford: mean and variance in one pass\n"
             << "    int " << n << " = 0;  // values this thread has seen\n"
             << "    float " << acc << " = 0.0f;  // mean for " << cpp_comment(comp.name) << "\n"
             << "    float " << acc2 << " = 0.0f;  // variance for " << cpp_comment(comp2.name) << "\n";
        }
        const std::string shift = "shift" + std::to_string(c);
        if (!online) {
          // Welford's rounding grows with |mean| / stddev (each running mean is rounded at the mean's
          // magnitude); values minus the row's first one have a mean near their spread.
          std::vector<std::string> at0 = vars;
          at0.resize(k.outer.size() + comp.reduce_sizes.size(), "0");
          if (maybe_empty) {
            os << "    float " << shift << " = 0.0f;  // the row's first value: Welford runs on the values minus it\n"
               << "    if (" << length << " > 0) {\n";
            std::string v0 = statement(os, "      ", comp.body, at0, accs, k.outer.size());
            os << "      " << shift << " = " << v0 << ";\n    }\n";
          } else {
            std::string v0 = statement(os, "    ", comp.body, at0, accs, k.outer.size());
            os << "    const float " << shift << " = " << v0 << ";  // the row's first value: Welford runs on the values minus it\n";
          }
        }
        os << "    for (long long r = " << first << "; r < " << length << "; r += " << step << ") {\n";
        std::vector<std::string> rvars = vars;
        unflatten(os, "r", comp.reduce_sizes, k.outer.size(), "      ", rvars);
        std::string v = statement(os, "      ", comp.body, rvars, accs, k.outer.size());
        if (online) os << "      kiln_online_add(" << acc << ", " << acc2 << ", " << v << ");\n    }\n";
        else os << "      kiln_welford_add(" << n << ", " << acc << ", " << acc2 << ", " << v << " - " << shift << ");\n    }\n";
        if (online) {
          if (warp) os << "    kiln_warp_online(" << acc << ", " << acc2 << ");\n";
          else os << "    kiln_block_online(" << acc << ", " << acc2 << ", smem);\n";
          os << "    if (" << acc << " == -INFINITY" << (maybe_empty ? " && " + length + " > 0" : "") << ") " << acc2
             << " = NAN;  // as two passes give: exp(-inf - -inf) summed over a row of only -inf\n";
        } else {
          if (warp) os << "    kiln_warp_welford(" << n << ", " << acc << ", " << acc2 << ");\n";
          else os << "    kiln_block_welford(" << n << ", " << acc << ", " << acc2 << ", smem);\n";
          os << "    " << acc << " = " << shift << " + " << acc << ";\n";
          if (maybe_empty) os << "    if (" << n << " == 0) " << acc << " = NAN;  // 0 / 0, as sum / n gives\n";
          os << "    " << acc2 << " = " << acc2 << " / static_cast<float>(" << size_product(comp2.post_div_sizes) << ");  // from M2 to the variance\n";
        }
        store(c, acc);
        store(c2, acc2);
        ++i;
      } else if (comp.kind == Comp::Kind::Reduction) {
        std::string acc = "acc" + std::to_string(c);
        std::string op = comp.reduce_op;
        os << "    float " << acc << " = " << (op == "sum" ? "0.0f" : op == "max" ? "-INFINITY" : "INFINITY") << ";  // "
           << op << " for " << cpp_comment(comp.name) << "\n";
        os << "    for (long long r = " << first << "; r < " << size_product(comp.reduce_sizes) << "; r += " << step << ") {\n";
        std::vector<std::string> rvars = vars;
        unflatten(os, "r", comp.reduce_sizes, k.outer.size(), "      ", rvars);
        std::string v = statement(os, "      ", comp.body, rvars, accs, k.outer.size());
        if (op == "sum") os << "      " << acc << " += " << v << ";\n";
        else os << "      " << acc << " = kiln_" << op << "(" << acc << ", " << v << ");\n";
        os << "    }\n";
        if (warp) os << "    " << acc << " = kiln_warp_" << op << "(" << acc << ");\n";
        else os << "    " << acc << " = kiln_block_" << op << "(" << acc << ", smem);\n";
        if (!comp.post_div_sizes.empty())
          os << "    " << acc << " = " << acc << " / static_cast<float>(" << size_product(comp.post_div_sizes) << ");\n";
        store(c, acc);
      } else {
        std::vector<Sym> inner(comp.sizes.begin() + k.outer.size(), comp.sizes.end());
        os << "    for (long long e = " << first << "; e < " << size_product(inner) << "; e += " << step << ") {\n";
        std::vector<std::string> ivars = vars;
        unflatten(os, "e", inner, k.outer.size(), "      ", ivars);
        std::vector<lowering::IExpr> idx;
        for (size_t d = 0; d < comp.sizes.size(); ++d) idx.push_back(lowering::ie_var(static_cast<int>(d)));
        std::string v = statement(os, "      ", comp.body, ivars, accs, k.outer.size(), &comp);
        os << "      b" << c << "[" << offset(c, idx, ivars) << "] = " << v << ";  // " << cpp_comment(comp.name) << "\n";
        os << "    }\n";
      }
    }
    os << (warp ? "    __syncwarp();\n  }\n" : "    __syncthreads();\n  }\n");
  }
};

// One thread per row: every loop of the row runs serially in its thread, so neighbouring
// threads handle neighbouring rows (a column reduction's rows are neighbours in memory).
void emit_column(CudaEmitter& em, std::ostringstream& os, const FusedKernel& k) {
  const auto& p = em.p;
  os << "  const long long rows = " << em.size_product(k.outer) << ";\n";
  os << "  for (long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; row < rows; "
        "row += static_cast<long long>(gridDim.x) * blockDim.x) {\n";
  // Rows in the storage order of the reductions' output (a channels-last pooling walks the
  // channel fastest: neighbouring threads read and write neighbouring elements).
  const auto& first = p.program.comps[k.comps[0]];
  std::vector<std::string> vars;
  em.unflatten(os, "row", k.outer, 0, "    ", vars, first.sizes.size() == k.outer.size() ? first.layout : std::vector<int>{});
  std::map<int, std::string> accs;
  std::vector<lowering::IExpr> row_idx;
  for (size_t d = 0; d < k.outer.size(); ++d) row_idx.push_back(lowering::ie_var(static_cast<int>(d)));
  for (int c : k.comps) {
    const Comp& comp = p.program.comps[c];
    std::string acc = "acc" + std::to_string(c);
    const std::string& op = comp.reduce_op;
    os << "    float " << acc << " = " << (op == "sum" ? "0.0f" : op == "max" ? "-INFINITY" : "INFINITY") << ";  // "
       << op << " for " << cpp_comment(comp.name) << "\n";
    os << "    for (long long r = 0; r < " << em.size_product(comp.reduce_sizes) << "; ++r) {\n";
    std::vector<std::string> rvars = vars;
    em.unflatten(os, "r", comp.reduce_sizes, k.outer.size(), "      ", rvars);
    std::string v = em.statement(os, "      ", comp.body, rvars, accs, k.outer.size());
    if (op == "sum") os << "      " << acc << " += " << v << ";\n";
    else os << "      " << acc << " = kiln_" << op << "(" << acc << ", " << v << ");\n";
    os << "    }\n";
    if (!comp.post_div_sizes.empty())
      os << "    " << acc << " = " << acc << " / static_cast<float>(" << em.size_product(comp.post_div_sizes) << ");\n";
    os << "    b" << c << "[" << em.offset(c, row_idx, vars) << "] = " << acc << ";\n";
    accs[c] = acc;
  }
  os << "  }\n";
}

}  // namespace

std::vector<std::string> cuda_units(const std::string& source, const std::vector<CudaKernelInfo>& info) {
  std::vector<std::string> units;
  for (const auto& k : info) {
    if (k.source_end <= k.source_begin || k.source_end > source.size() || k.prelude_end > k.source_begin) return {source};
    units.push_back(source.substr(0, k.prelude_end) + source.substr(k.source_begin, k.source_end - k.source_begin));
  }
  return units;
}

std::string emit_cuda(const fusion::FusedProgram& p, const std::vector<NodeNote>& notes,
                      std::vector<CudaKernelInfo>* info, bool variants) {
  CudaEmitter em(p, KernelExpr::Dialect::Cuda);
  std::ostringstream os;
  bool uses_half = false;
  for (const auto& c : p.program.comps) uses_half |= c.dtype == ir::DType::Float16 || c.dtype == ir::DType::BFloat16;
  size_t nbuf = std::max<size_t>(1, p.program.comps.size());
  size_t nscalar = std::max<size_t>(1, p.program.scalar_inputs.size());
  size_t nsym = std::max<size_t>(1, p.program.symbols.size());
  os << "// Generated by Kiln's CUDA backend (NVRTC). One __global__ function per fused kernel.\n"
     << "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n\n"
     << "struct KilnArgs {\n  void* buf[" << nbuf << "];\n  double scalar[" << nscalar << "];\n  long long sym[" << nsym
     << "];\n};\n\n"
     << "__device__ __forceinline__ long long kiln_floordiv(long long a, long long b) { long long q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
     << "__device__ __forceinline__ long long kiln_mod(long long a, long long b) { long long r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n"
     << (uses_half ? kHalfTypes : "")
     << "__device__ __forceinline__ float kiln_relu(float a) { return a != a ? a : (a > 0.0f ? a : 0.0f); }\n"
     << "__device__ __forceinline__ float kiln_pow2(float x) { return x * x; }\n"
     << "__device__ __forceinline__ float kiln_pow3(float x) { return x * x * x; }\n"
     << "__device__ __forceinline__ float kiln_max(float a, float b) { return (a != a || a > b) ? a : b; }\n"
     << "__device__ __forceinline__ float kiln_min(float a, float b) { return (a != a || a < b) ? a : b; }\n"
     << "__device__ __forceinline__ float kiln_sum(float a, float b) { return a + b; }\n";
  for (const char* op : {"sum", "max", "min"}) {
    std::string ident = std::string(op) == "sum" ? "0.0f" : std::string(op) == "max" ? "-INFINITY" : "INFINITY";
    os << "// Block-wide " << op << ": warp shuffles, then one value per warp through shared memory.\n"
       << "__device__ float kiln_block_" << op << "(float v, float* smem) {\n"
       << "  for (int o = 16; o > 0; o >>= 1) v = kiln_" << op << "(v, __shfl_down_sync(0xffffffffu, v, o));\n"
       << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
       << "  __syncthreads();\n  if (lane == 0) smem[warp] = v;\n  __syncthreads();\n"
       << "  if (warp == 0) {\n    v = threadIdx.x < ((blockDim.x + 31) >> 5) ? smem[lane] : " << ident << ";\n"
       << "    for (int o = 16; o > 0; o >>= 1) v = kiln_" << op << "(v, __shfl_down_sync(0xffffffffu, v, o));\n"
       << "    if (lane == 0) smem[32] = v;\n  }\n  __syncthreads();\n  return smem[32];\n}\n";
  }
  for (const char* op : {"sum", "max", "min"}) {
    os << "// Warp-wide " << op << " (every lane gets the result); __syncwarp orders the row's stores.\n"
       << "__device__ __forceinline__ float kiln_warp_" << op << "(float v) {\n  __syncwarp();\n"
       << "  for (int o = 16; o > 0; o >>= 1) v = kiln_" << op << "(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
       << "  return v;\n}\n";
  }
  // The one-pass row forms (CudaEmitter::row): a (max, sum of exp) pair and a Welford
  // (count, mean, M2) triple per thread, merged pairwise. Both merges are symmetric, so the xor
  // butterfly leaves every lane with the same bits, as the single-value helpers do.
  os << "// Online softmax: (m, s) is the max of a thread's values and the sum of exp(x - m). While every value\n"
     << "// is -inf, s stays 0 (exp(-inf - -inf) would make it NaN for good); an equal max skips the rescale.\n"
     << "__device__ __forceinline__ void kiln_online_add(float& m, float& s, float x) {\n"
     << "  const float mx = kiln_max(m, x);\n  if (mx == -INFINITY) return;\n"
     << "  s = (m == mx ? s : s * expf(m - mx)) + expf(x - mx);\n  m = mx;\n}\n"
     << "__device__ __forceinline__ void kiln_online_merge(float& m, float& s, float mb, float sb) {\n"
     << "  const float mx = kiln_max(m, mb);\n  if (mx == -INFINITY) return;\n"
     << "  s = (m == mx ? s : s * expf(m - mx)) + (mb == mx ? sb : sb * expf(mb - mx));\n  m = mx;\n}\n"
     << "__device__ __forceinline__ void kiln_warp_online(float& m, float& s) {\n  __syncwarp();\n"
     << "  for (int o = 16; o > 0; o >>= 1)\n"
     << "    kiln_online_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));\n}\n"
     << "__device__ void kiln_block_online(float& m, float& s, float* smem) {  // smem: 66 floats\n"
     << "  kiln_warp_online(m, s);\n"
     << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
     << "  __syncthreads();\n  if (lane == 0) { smem[warp] = m; smem[33 + warp] = s; }\n  __syncthreads();\n"
     << "  if (warp == 0) {\n    const bool live = threadIdx.x < ((blockDim.x + 31) >> 5);\n"
     << "    m = live ? smem[lane] : -INFINITY;\n    s = live ? smem[33 + lane] : 0.0f;\n"
     << "    kiln_warp_online(m, s);\n    if (lane == 0) { smem[32] = m; smem[65] = s; }\n  }\n"
     << "  __syncthreads();\n  m = smem[32];\n  s = smem[65];\n}\n"
     << "// Welford: n values seen, their mean and M2 = sum((x - mean)^2). The merge is Chan et al.'s, with\n"
     << "// the mean as a weighted average (__fmul_rn: no fma contraction, so merge(a, b) == merge(b, a)).\n"
     << "__device__ __forceinline__ void kiln_welford_add(int& n, float& mean, float& m2, float x) {\n"
     << "  n += 1;\n  const float d = x - mean;\n  mean += d / static_cast<float>(n);\n  m2 += d * (x - mean);\n}\n"
     << "__device__ __forceinline__ void kiln_welford_merge(int& n, float& mean, float& m2, int nb, float meanb, float m2b) {\n"
     << "  if (nb == 0) return;\n  if (n == 0) { n = nb; mean = meanb; m2 = m2b; return; }\n"
     << "  const float fa = static_cast<float>(n), fb = static_cast<float>(nb), f = fa + fb, d = meanb - mean;\n"
     << "  mean = (__fmul_rn(fa, mean) + __fmul_rn(fb, meanb)) / f;\n"
     << "  m2 = (m2 + m2b) + d * d * (fa * fb / f);\n  n += nb;\n}\n"
     << "__device__ __forceinline__ void kiln_warp_welford(int& n, float& mean, float& m2) {\n  __syncwarp();\n"
     << "  for (int o = 16; o > 0; o >>= 1)\n"
     << "    kiln_welford_merge(n, mean, m2, __shfl_xor_sync(0xffffffffu, n, o), __shfl_xor_sync(0xffffffffu, mean, o),\n"
     << "                       __shfl_xor_sync(0xffffffffu, m2, o));\n}\n"
     << "__device__ void kiln_block_welford(int& n, float& mean, float& m2, float* smem) {  // smem: 99 floats\n"
     << "  kiln_warp_welford(n, mean, m2);\n"
     << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
     << "  __syncthreads();\n"
     << "  if (lane == 0) { smem[warp] = mean; smem[33 + warp] = m2; smem[66 + warp] = __int_as_float(n); }\n"
     << "  __syncthreads();\n"
     << "  if (warp == 0) {\n    const bool live = threadIdx.x < ((blockDim.x + 31) >> 5);\n"
     << "    mean = live ? smem[lane] : 0.0f;\n    m2 = live ? smem[33 + lane] : 0.0f;\n"
     << "    n = live ? __float_as_int(smem[66 + lane]) : 0;\n"
     << "    kiln_warp_welford(n, mean, m2);\n"
     << "    if (lane == 0) { smem[32] = mean; smem[65] = m2; smem[98] = __int_as_float(n); }\n  }\n"
     << "  __syncthreads();\n  mean = smem[32];\n  m2 = smem[65];\n  n = __float_as_int(smem[98]);\n}\n";
  os << "\n";
  const size_t prelude_end = static_cast<size_t>(os.tellp());
  for (const auto& k : p.kernels) {
    int width = k.kind == FusedKernel::Kind::Row ? 1 : vector_width(p, k);
    std::ostringstream head;
    const bool row = k.kind == FusedKernel::Kind::Row;
    // A transposing kernel's tiles: 1024 elements per 256-thread block, launched as 4 per thread.
    const auto tiled = row ? std::nullopt : transpose_vars(p, k);
    const bool column = row && column_reduction(p, k);
    const bool warp = row && !column && warp_per_row(p, k);
    head << "// " << k.name << ": "
         << (column   ? "row kernel (one thread per row)"
             : row    ? (warp ? "row kernel (one warp per row)" : "row kernel (one block per row)")
             : tiled  ? "pointwise kernel (transposing, in 32x32 tiles)"
                      : "pointwise kernel")
         << " fusing " << k.nodes.size() << " graph node" << (k.nodes.size() == 1 ? "" : "s") << "\n";
    head << node_comment_lines(k.nodes, notes);
    std::vector<CudaKernelVariant> forms = {{k.name, tiled ? 4 : width, warp, column}};
    if (variants && width == 4) {
      forms.push_back({k.name + "_w2", 2, false});
      forms.push_back({k.name + "_w1", 1, false});
    }
    if (variants && row && !column) forms.push_back({k.name + (warp ? "_block" : "_warp"), 1, !warp});
    if (variants && column && longest_row(p, k) > 16) {  // the row mappings compete with the column form
      forms.push_back({k.name + "_warp", 1, true});
      forms.push_back({k.name + "_block", 1, false});
    }
    const size_t begin = static_cast<size_t>(os.tellp());
    // Its own argument block: only the buffers it reads or writes (a launch copies the whole block,
    // and a region's every buffer would make each launch carry kilobytes), then scalars and sizes.
    std::ostringstream decl;
    em.declare_buffers(decl, k, ctype, "args.buf");
    std::vector<int> buffers;
    const std::string declared = own_buffer_indices(decl.str(), buffers);
    std::ostringstream block;
    block << "struct KilnArgs_" << k.name << " {\n  void* buf[" << std::max<size_t>(1, buffers.size())
          << "];\n  double scalar[" << nscalar << "];\n  long long sym[" << nsym << "];\n};\n";
    size_t function_end = 0;
    for (const auto& f : forms) {
      if (f.function == k.name) os << head.str() << block.str();  // forms[0]: before every form
      else if (row) os << "// " << k.name << " with " << (f.thread_per_row ? "one thread" : f.warp_per_row ? "one warp" : "one block")
                       << " per row (an autotuning candidate)\n";
      else os << "// " << k.name << " with " << f.vector_width << " element" << (f.vector_width == 1 ? "" : "s")
              << " per thread (an autotuning candidate)\n";
      em.extent_of.clear();  // no loop variable of another kernel
      os << "extern \"C\" __global__ void " << f.function << "(const KilnArgs_" << k.name << " args) {\n";
      os << "  const double* scalar = args.scalar; const long long* sym = args.sym; (void)scalar; (void)sym;\n";
      os << declared;
      if (row && f.thread_per_row) emit_column(em, os, k);
      else if (row) em.row(os, k, f.warp_per_row);
      else if (tiled && f.function == k.name) em.transpose(os, k, *tiled);
      else em.pointwise(os, k, f.vector_width);
      os << "}\n";
      if (f.function == k.name) function_end = static_cast<size_t>(os.tellp());
      os << "\n";
    }
    if (info) {
      CudaKernelInfo ki;
      ki.name = k.name;
      ki.row = k.kind == FusedKernel::Kind::Row;
      ki.range = ki.row ? k.outer : p.program.comps[k.comps[0]].sizes;
      ki.vector_width = tiled ? 4 : width;
      ki.variants = forms;
      ki.buffers = buffers;
      ki.prelude_end = prelude_end;
      ki.source_begin = begin;
      ki.source_end = static_cast<size_t>(os.tellp());
      ki.function_end = function_end;
      info->push_back(ki);
    }
  }
  return os.str();
}

}  // namespace kiln::codegen

#include "engine/codegen/cuda/emit_cuda.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "engine/base/cores.h"
#include "engine/base/in_parts.h"
#include "engine/codegen/cuda/emit_rows.h"
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

struct CudaEmitter : RowKernelEmitter {
  using RowKernelEmitter::RowKernelEmitter;

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
    os << "  const kiln_i total = " << total << ";\n";
    if (width == 1) {
      os << "  for (kiln_i flat = static_cast<kiln_i>(blockIdx.x) * blockDim.x + threadIdx.x; flat < total; flat += "
            "static_cast<kiln_i>(gridDim.x) * blockDim.x) {\n";
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
    os << "  for (kiln_i base = (static_cast<kiln_i>(blockIdx.x) * blockDim.x + threadIdx.x) * " << width
       << "; base < total; base += static_cast<kiln_i>(gridDim.x) * blockDim.x * " << width << ") {\n";
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

  // A window's kernel `rows` outputs at a time along its width (dim 3; kernel_mapping's window_rows) for each of
  // `lanes` neighbouring channels (dim 1, stored innermost; window_lanes): the loop runs over groups of outputs;
  // each computation is one statement over the group, in which the taps its outputs share (every tap's index stays
  // in bounds) are loaded once, then stored output by output. With 4 lanes, a load whose innermost stored index is
  // the channel itself moves as one float4 and each output's 4 channels are stored as one: such a form
  // (CudaKernelVariant::aligned16) is launched only when every buffer of the kernel is 16-byte aligned.
  void window_rows(std::ostringstream& os, const FusedKernel& k, int rows, int lanes, int height = 1) {
    const Comp& first = p.program.comps[k.comps[0]];
    std::vector<Sym> groups = first.sizes;
    groups[3] = capture::sym_const(first.sizes[3]->value / rows);
    groups[2] = capture::sym_const(first.sizes[2]->value / height);
    if (lanes > 1) groups[1] = capture::sym_const(first.sizes[1]->value / lanes);
    std::ostringstream loop;
    std::vector<std::string> vars;
    unflatten(loop, "flat", groups, 0, "    ", vars, first.layout);
    std::vector<std::vector<std::string>> lane_vars(static_cast<size_t>(lanes), vars);
    if (lanes > 1)
      for (int l = 0; l < lanes; ++l) {
        lane_vars[l][1] = "(" + vars[1] + " * " + std::to_string(lanes) + (l ? " + " + std::to_string(l) : "") + ")";
        set_extent(lane_vars[l][1], first.sizes[1]);
      }
    // The thread's outputs, `rows` along the width for each of `height` along the height.
    const int outputs = rows * height;
    std::vector<std::vector<lowering::IExpr>> at(static_cast<size_t>(outputs));
    for (int t = 0; t < outputs; ++t) {
      for (int d = 0; d < 4; ++d) at[t].push_back(lowering::ie_var(d));
      at[t][3] = lowering::ie_add(lowering::ie_mul(lowering::ie_var(3), lowering::ie_const(rows)), lowering::ie_const(t % rows));
      if (height > 1)
        at[t][2] =
            lowering::ie_add(lowering::ie_mul(lowering::ie_var(2), lowering::ie_const(height)), lowering::ie_const(t / rows));
    }
    // Four lanes: loads whose innermost stored index is the channel itself, as float4s at lane 0's offset.
    int lane = 0;
    if (lanes == 4)
      load_hook = [&](const VExpr& e, const std::vector<std::string>& lv) -> std::string {
        const Comp& c = p.program.comps[e->comp];
        if (c.dtype != ir::DType::Float32 || !p.realized[e->comp] || e->index.size() != c.sizes.size()) return "";
        const int inner = lowering::storage_order(c).back();
        const auto& ix = e->index[static_cast<size_t>(inner)];
        if (ix->op != lowering::IExprNode::Op::Var || ix->var != 1 || !capture::sym_is_const(c.sizes[inner]) ||
            c.sizes[inner]->value % 4 != 0 || !in_bounds(e, lv))
          return "";
        std::function<bool(const lowering::IExpr&)> channel = [&](const lowering::IExpr& i) {
          return i && ((i->op == lowering::IExprNode::Op::Var && i->var == 1) || channel(i->a) || channel(i->b));
        };
        for (size_t d = 0; d < e->index.size(); ++d)
          if (static_cast<int>(d) != inner && channel(e->index[d])) return "";
        return hoisted("*reinterpret_cast<const float4*>(b" + std::to_string(e->comp) + " + " +
                       offset(e->comp, e->index, lane_vars[0]) + ")") + "." + "xyzw"[lane];
      };
    os << "  // " << rows << " neighbouring output" << (rows == 1 ? "" : "s") << " along the width";
    if (height > 1) os << " for each of " << height << " along the height";
    if (lanes > 1) os << " x " << lanes << " neighbouring channels (float4s: launched on 16-byte aligned buffers only)";
    os << " per thread, the taps they share loaded once\n";
    os << "  const kiln_i total = " << size_product(groups) << ";\n";
    os << "  for (kiln_i flat = static_cast<kiln_i>(blockIdx.x) * blockDim.x + threadIdx.x; flat < total; flat += "
          "static_cast<kiln_i>(gridDim.x) * blockDim.x) {\n";
    os << loop.str();
    for (int c : k.comps) {
      const Comp& comp = p.program.comps[c];
      std::map<std::string, std::string> table;
      std::vector<std::string> lines;
      std::vector<std::vector<std::string>> v(static_cast<size_t>(outputs));
      begin_statement(table, lines);
      hoist_loads = true;
      for (int t = 0; t < outputs; ++t)
        for (lane = 0; lane < lanes; ++lane)
          v[t].push_back(store_value(comp, lowering::ve_subst(comp.body, at[t]), lane_vars[lane], {}, 0));
      hoist_loads = false;
      end_statement();
      for (const auto& l : lines) os << "    " << l << "\n";
      for (int t = 0; t < outputs; ++t) {
        if (lanes == 4) {
          os << "    *reinterpret_cast<float4*>(b" << c << " + " << offset(c, at[t], lane_vars[0]) << ") = make_float4("
             << v[t][0] << ", " << v[t][1] << ", " << v[t][2] << ", " << v[t][3] << ");  // " << cpp_comment(comp.name) << "\n";
          continue;
        }
        for (int l = 0; l < lanes; ++l)
          os << "    b" << c << "[" << offset(c, at[t], lane_vars[l]) << "] = " << v[t][l] << ";  // "
             << cpp_comment(comp.name) << "\n";
      }
    }
    load_hook = nullptr;
    os << "  }\n";
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
    os << "  const kiln_i tiles = " << size_product(others) << " * " << lit(tiles_in) << " * " << lit(tiles_out) << ";\n";
    os << "  for (kiln_i t = blockIdx.x; t < tiles; t += gridDim.x) {\n";
    os << "    const kiln_i t_in = t % " << lit(tiles_in) << ", t_rest = t / " << lit(tiles_in) << ";\n";
    os << "    const kiln_i t_out = t_rest % " << lit(tiles_out) << ", rest = t_rest / " << lit(tiles_out) << ";\n";
    // The other dims from `rest`, row-major, each named after its own dim.
    std::vector<std::string> vars(rank);
    std::string rest = "rest";
    for (size_t j = other_dims.size(); j-- > 0;) {
      const std::string d = std::to_string(other_dims[j]);
      if (j == 0) {
        os << "    const kiln_i i" << d << " = " << rest << ";\n";
      } else {
        os << "    const kiln_i i" << d << " = " << rest << " % " << size(others[j]) << ";\n";
        os << "    const kiln_i q" << d << " = " << rest << " / " << size(others[j]) << ";\n";
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
    os << "      const kiln_i " << vin << " = t_in * 32 + (e & 31), " << vout << " = t_out * 32 + (e >> 5);\n";
    os << "      if (" << vin << " < " << lit(n_in) << " && " << vout << " < " << lit(n_out) << ") {\n";
    std::string v = statement(os, "        ", comp.body, vars, {}, 0, &comp);
    os << "        tile[e >> 5][e & 31] = " << v << ";\n      }\n    }\n    __syncthreads();\n";
    os << "    for (int e = threadIdx.x; e < 1024; e += blockDim.x) {\n";
    os << "      const kiln_i " << vout << " = t_out * 32 + (e & 31), " << vin << " = t_in * 32 + (e >> 5);\n";
    std::vector<lowering::IExpr> idx;
    for (size_t d = 0; d < rank; ++d) idx.push_back(lowering::ie_var(static_cast<int>(d)));
    os << "      if (" << vin << " < " << lit(n_in) << " && " << vout << " < " << lit(n_out) << ") b" << c << "["
       << offset(c, idx, vars) << "] = tile[e & 31][e >> 5];  // " << cpp_comment(comp.name) << "\n";
    os << "    }\n    __syncthreads();\n  }\n";
  }
};

}  // namespace

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

std::vector<std::string> cuda_units(const std::string& source, const std::vector<CudaKernelInfo>& info) {
  std::vector<std::string> units;
  for (const auto& k : info) {
    if (k.source_end <= k.source_begin || k.source_end > source.size() || k.prelude_end > k.source_begin) return {source};
    units.push_back(source.substr(0, k.prelude_end) + source.substr(k.source_begin, k.source_end - k.source_begin));
  }
  return units;
}

namespace {

// One kernel's functions (its forms) and argument block, in a text of its own with its own emitter (so its
// temporaries are numbered from t0 whatever the kernels before it used); the offsets in its info are the
// text's own (emit_cuda moves them to where the text lands).
struct KernelPiece {
  std::string text;
  CudaKernelInfo info;
};

KernelPiece emit_kernel(const fusion::FusedProgram& p, const std::vector<NodeNote>& notes, const FusedKernel& k,
                        bool variants, bool narrow, size_t nscalar, size_t nsym, size_t prelude_end) {
  KernelPiece out;
  CudaEmitter em(p, KernelExpr::Dialect::Cuda);
  em.narrow = narrow;
  std::ostringstream os;
  int width = k.kind == FusedKernel::Kind::Row ? 1 : vector_width(p, k);
  std::ostringstream head;
  const bool row = k.kind == FusedKernel::Kind::Row;
  // A transposing kernel's tiles: 1024 elements per 256-thread block, launched as 4 per thread.
  const auto tiled = row ? std::nullopt : transpose_vars(p, k);
  const RowTile tile = row ? row_tile(p, k) : RowTile{};
  const bool tiles = tile.width && tile.preferred;
  const bool column = row && !tiles && column_reduction(p, k);
  const bool warp = row && !tiles && !column && warp_per_row(p, k);
  const int rows = row || tiled ? 1 : window_rows(p, k), lanes = row || tiled ? 1 : window_lanes(p, k);
  const int height = row || tiled ? 1 : window_height(p, k);
  const bool window = rows > 1;
  head << "// " << k.name << ": "
       << (tiles ? "row kernel (rows in tiles of " + std::to_string(tile.width) + ", threads splitting each row)"
           : column ? "row kernel (one thread per row)"
           : row    ? (warp ? "row kernel (one warp per row)" : "row kernel (one block per row)")
           : tiled  ? "pointwise kernel (transposing, in 32x32 tiles)"
           : window ? "pointwise kernel (" + std::string(layout_copy(p, k) ? "a copy into another order, " : "a window, ") +
                          std::to_string(rows) + " outputs along the width" +
                          (height > 1 ? " for each of " + std::to_string(height) + " along the height" : std::string()) +
                          " per thread)"
                    : "pointwise kernel")
       << " fusing " << k.nodes.size() << " graph node" << (k.nodes.size() == 1 ? "" : "s") << "\n";
  head << node_comment_lines(k.nodes, notes);
  std::vector<CudaKernelVariant> forms = {{k.name, tiled ? 4 : width, warp, column, tiles ? tile.width : 0,
                                           tiles ? tile.threads : 0}};
  if (window) {
    forms[0] = {k.name, rows * height, false, false, 0, 0, true, 1, false, height};
    // Autotuning candidates: one output per thread; the default's outputs along the width alone (where it takes 2
    // along the height) or with 2 along the height (a pooling's window, where it takes 1); its height with the other widths that divide the map (4, and the largest divisor up to 8);
    // and where the channels allow, 4 channels per thread as float4s with the default's outputs along the width,
    // 2 and 1.
    const int64_t width = p.program.comps[k.comps[0]].sizes[3]->value;
    auto along = [&](int w, int h) {
      forms.push_back({k.name + "_r" + std::to_string(w) + "h" + std::to_string(h), w * h, false, false, 0, 0, true, 1,
                       false, h});
    };
    if (variants) forms.push_back({k.name + "_w1", 1, false});
    if (variants && !layout_copy(p, k)) {
      if (height > 1) along(rows, 1);
      if (height == 1 && p.program.comps[k.comps[0]].sizes[2]->value % 2 == 0) along(rows, 2);  // a pooling's
      int wide = 1;
      for (int d = 8; d > 1 && wide == 1; --d)
        if (width % d == 0) wide = d;
      if (wide != rows && wide > 1) along(wide, height);
      if (width % 4 == 0 && rows != 4 && wide != 4) along(4, height);
    }
    if (variants && lanes > 1) {
      // (at most 4 along the width: 8 x 4 channels would hold 32 sums per thread)
      const int c4_rows = width % 4 == 0 ? 4 : rows;
      if (c4_rows > 2) forms.push_back({k.name + "_c4", c4_rows * lanes, false, false, 0, 0, true, lanes, true});
      if (width % 2 == 0) forms.push_back({k.name + "_c4r2", 2 * lanes, false, false, 0, 0, true, lanes, true});
      forms.push_back({k.name + "_c4r1", lanes, false, false, 0, 0, true, lanes, true});
    }
  } else if (variants && width == 4) {
    forms.push_back({k.name + "_w2", 2, false});
    forms.push_back({k.name + "_w1", 1, false});
  }
  // Every other row form the kernel can take races its own: one warp and one block per row (not for
  // tiny rows, which run one thread each), and where the rows are column-like the tiles and, with
  // no per-row epilogue, one thread per row.
  if (variants && row && !column) {
    if (!warp) forms.push_back({k.name + "_warp", 1, true});
    if (warp || tiles) forms.push_back({k.name + "_block", 1, false});
    if (tile.width && !tiles) forms.push_back({k.name + "_tiles", 1, false, false, tile.width, tile.threads});
    if (tile.reductions_only) forms.push_back({k.name + "_thread", 1, false, true});
  }
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
    else if (row && f.row_tile) os << "// " << k.name << " in tiles of " << f.row_tile << " rows (an autotuning candidate)\n";
    else if (row) os << "// " << k.name << " with " << (f.thread_per_row ? "one thread" : f.warp_per_row ? "one warp" : "one block")
                     << " per row (an autotuning candidate)\n";
    else if (f.window_rows) {
      const int along = f.vector_width / (f.window_lanes * f.window_height);
      os << "// " << k.name << " with " << along << " output" << (along == 1 ? "" : "s") << " along the width x ";
      if (f.window_height > 1) os << f.window_height << " along the height x ";
      os << f.window_lanes << " channel" << (f.window_lanes == 1 ? "" : "s") << " per thread (an autotuning candidate)\n";
    }
    else os << "// " << k.name << " with " << f.vector_width << " element" << (f.vector_width == 1 ? "" : "s")
            << " per thread (an autotuning candidate)\n";
    em.extent_of.clear();  // no loop variable of another kernel
    os << "extern \"C\" __global__ void " << f.function << "(const KilnArgs_" << k.name << " args) {\n";
    os << "  const double* scalar = args.scalar; const long long* sym = args.sym; (void)scalar; (void)sym;\n";
    os << (em.narrow ? "  typedef int kiln_i;  // index arithmetic: every extent of the region fits 32 bits\n"
                     : "  typedef long long kiln_i;  // index arithmetic\n");
    os << declared;
    if (row && f.row_tile) emit_row_tiles(em, os, k, f.row_tile);
    else if (row && f.thread_per_row) emit_column(em, os, k);
    else if (row) em.row(os, k, f.warp_per_row);
    else if (tiled && f.function == k.name) em.transpose(os, k, *tiled);
    else if (f.window_rows)
      em.window_rows(os, k, f.vector_width / (f.window_lanes * f.window_height), f.window_lanes, f.window_height);
    else em.pointwise(os, k, f.vector_width);
    os << "}\n";
    if (f.function == k.name) function_end = static_cast<size_t>(os.tellp());
    os << "\n";
  }
  {
    CudaKernelInfo& ki = out.info;
    ki.name = k.name;
    ki.row = k.kind == FusedKernel::Kind::Row;
    ki.range = ki.row ? k.outer : p.program.comps[k.comps[0]].sizes;
    ki.vector_width = tiled ? 4 : window ? rows * height : width;
    ki.variants = forms;
    ki.buffers = buffers;
    ki.prelude_end = prelude_end;
    ki.source_begin = 0;  // the kernel's text starts its piece
    ki.source_end = static_cast<size_t>(os.tellp());
    ki.function_end = function_end;
  }
  out.text = os.str();
  return out;
}

// How many threads write a program's kernels: KILN_EMIT_THREADS when set (1: one after another), else the
// usable cores, at most one per kernel.
unsigned emit_threads(size_t kernels) {
  unsigned n = usable_cores();
  if (const char* v = std::getenv("KILN_EMIT_THREADS")) {
    char* end = nullptr;
    const long want = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && want >= 1 && want <= 1024) n = static_cast<unsigned>(want);
  }
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(n, kernels)));
}

}  // namespace

std::string emit_cuda(const fusion::FusedProgram& p, const std::vector<NodeNote>& notes,
                      std::vector<CudaKernelInfo>* info, bool variants) {
  const bool narrow = KernelExpr::index_fits_32(p);
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
     << "__device__ __forceinline__ int kiln_floordiv_i(int a, int b) { int q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
     << "__device__ __forceinline__ int kiln_mod_i(int a, int b) { int r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n"
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
  // Each kernel's text is written apart (emit_kernel: a pure function of the program), the kernels in parts on as
  // many threads as there are cores (in_parts: a part's exception rethrown here), then joined in the program's order:
  // the source is the same whatever the number of threads.
  std::vector<KernelPiece> pieces(p.kernels.size());
  in_parts(
      p.kernels.size(),
      [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i)
          pieces[i] = emit_kernel(p, notes, p.kernels[i], variants, narrow, nscalar, nsym, prelude_end);
      },
      2, emit_threads(p.kernels.size()));
  for (auto& piece : pieces) {
    const size_t base = static_cast<size_t>(os.tellp());
    os << piece.text;
    if (!info) continue;
    CudaKernelInfo ki = std::move(piece.info);
    ki.source_begin += base;
    ki.source_end += base;
    ki.function_end += base;
    info->push_back(std::move(ki));
  }
  return os.str();
}

}  // namespace kiln::codegen

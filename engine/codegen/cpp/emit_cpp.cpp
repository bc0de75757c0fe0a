#include "engine/codegen/cpp/emit_cpp.h"
#include "engine/codegen/kernel_expr.h"

#include <cmath>
#include <functional>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace kiln::codegen {

using fusion::FusedKernel;

namespace {

const char* ctype(ir::DType t) {
  switch (t) {
    case ir::DType::Float32: return "float";
    case ir::DType::Float64: return "double";
    case ir::DType::Int64: return "int64_t";
    case ir::DType::Int32: return "int32_t";
    case ir::DType::Int16: return "int16_t";
    case ir::DType::Int8: return "int8_t";
    case ir::DType::UInt8: return "uint8_t";
    case ir::DType::Bool: return "bool";
    case ir::DType::Float16: return "kiln_half";
    case ir::DType::BFloat16: return "kiln_bf16";
    default: return "float";
  }
}

// 16-bit floats: stored as their bits, read and written through float (math stays float32, as
// Inductor does); float -> 16 bits rounds to nearest even, NaN stays NaN.
const char* kHalfTypes =
    "#include <cstring>\n"
    "static inline uint16_t kiln_f32_to_f16(float f) {\n"
    "  uint32_t u; std::memcpy(&u, &f, 4);\n"
    "  const uint32_t sign = u & 0x80000000u; u ^= sign;\n"
    "  uint32_t o;\n"
    "  if (u >= 0x47800000u) o = u > 0x7f800000u ? 0x7e00u : 0x7c00u;  // overflow to inf; NaN stays NaN\n"
    "  else if (u < 0x38800000u) {  // subnormal or zero: let float addition round at the right bit\n"
    "    float a; std::memcpy(&a, &u, 4); a += 0.5f; uint32_t b; std::memcpy(&b, &a, 4); o = b - 0x3f000000u;\n"
    "  } else { o = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13; }\n"
    "  return static_cast<uint16_t>(o | (sign >> 16));\n"
    "}\n"
    "static inline float kiln_f16_to_f32(uint16_t h) {\n"
    "  const uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  uint32_t u;\n"
    "  if (e == 0) { float f = static_cast<float>(m) * 5.9604644775390625e-08f; std::memcpy(&u, &f, 4); u |= sign; }\n"
    "  else if (e == 31) u = sign | 0x7f800000u | (m << 13);\n"
    "  else u = sign | ((e + 112u) << 23) | (m << 13);\n"
    "  float f; std::memcpy(&f, &u, 4); return f;\n"
    "}\n"
    "struct kiln_half {\n"
    "  uint16_t bits;\n"
    "  kiln_half() = default;\n"
    "  kiln_half(float f) : bits(kiln_f32_to_f16(f)) {}\n"
    "  operator float() const { return kiln_f16_to_f32(bits); }\n"
    "};\n"
    "struct kiln_bf16 {\n"
    "  uint16_t bits;\n"
    "  kiln_bf16() = default;\n"
    "  kiln_bf16(float f) {\n"
    "    uint32_t u; std::memcpy(&u, &f, 4);\n"
    "    bits = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((u >> 16) | 0x40u)\n"
    "                                           : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "  }\n"
    "  operator float() const { uint32_t u = static_cast<uint32_t>(bits) << 16; float f; std::memcpy(&f, &u, 4); return f; }\n"
    "};\n\n";

struct Emitter : KernelExpr {
  using KernelExpr::KernelExpr;

  // Opens one loop per dim, nested row-major or along `order` (a storage order, outermost first);
  // vars are named by dim either way.
  void loops_open(std::ostringstream& os, const std::vector<Sym>& sizes, size_t first_var, const std::string& indent,
                  bool parallel, std::vector<std::string>& vars, const std::vector<int>& order = {}) {
    for (size_t d = 0; d < sizes.size(); ++d) vars.push_back("i" + std::to_string(first_var + d));
    for (size_t j = 0; j < sizes.size(); ++j) {
      const size_t d = order.empty() ? j : static_cast<size_t>(order[j]);
      const std::string& v = vars[vars.size() - sizes.size() + d];
      std::string pad = indent + std::string(2 * j, ' ');
      if (j == 0 && parallel) os << pad << "#pragma omp parallel for if(" << size_product(sizes) << " > 16384)\n";
      os << pad << "for (int64_t " << v << " = 0; " << v << " < " << size(sizes[d]) << "; ++" << v << ") {\n";
      set_extent(v, sizes[d]);
    }
  }
  void loops_close(std::ostringstream& os, size_t n, const std::string& indent) {
    for (size_t d = n; d-- > 0;) os << indent << std::string(2 * d, ' ') << "}\n";
  }


  void comment_nodes(std::ostringstream& os, const FusedKernel& k, const std::vector<NodeNote>& notes) {
    os << "// " << k.name << ": " << (k.kind == FusedKernel::Kind::Row ? "row kernel" : "pointwise kernel")
       << " fusing " << k.nodes.size() << " graph node" << (k.nodes.size() == 1 ? "" : "s") << "\n";
    os << node_comment_lines(k.nodes, notes);
  }

  void pointwise_kernel(std::ostringstream& os, const FusedKernel& k) {
    const auto& sizes = p.program.comps[k.comps[0]].sizes;
    std::vector<std::string> vars;
    loops_open(os, sizes, 0, "  ", true, vars, p.program.comps[k.comps[0]].layout);
    std::string pad = "  " + std::string(2 * sizes.size(), ' ');
    store_each(os, k.comps, vars, pad);
    loops_close(os, sizes.size(), "  ");
  }

  void row_kernel(std::ostringstream& os, const FusedKernel& k) {
    std::vector<std::string> vars;
    loops_open(os, k.outer, 0, "  ", true, vars);
    std::string pad = "  " + std::string(2 * k.outer.size(), ' ');
    std::map<int, std::string> accs;
    std::vector<lowering::IExpr> row_idx;
    for (size_t d = 0; d < k.outer.size(); ++d) row_idx.push_back(lowering::ie_var(static_cast<int>(d)));
    for (int c : k.comps) {
      const Comp& comp = p.program.comps[c];
      if (comp.kind == Comp::Kind::Reduction) {
        std::string acc = "acc" + std::to_string(c);
        bool sum = comp.reduce_op == "sum";
        os << pad << (sum ? "double " : "float ") << acc << " = "
           << (sum ? "0.0" : comp.reduce_op == "max" ? "-INFINITY" : "INFINITY") << ";  // " << comp.reduce_op << " for "
           << cpp_comment(comp.name) << "\n";
        std::vector<std::string> rvars = vars;
        std::ostringstream inner;
        loops_open(inner, comp.reduce_sizes, k.outer.size(), pad, false, rvars);
        std::string ipad = pad + std::string(2 * comp.reduce_sizes.size(), ' ');
        std::string v = statement(inner, ipad, comp.body, rvars, accs, k.outer.size());
        if (sum) inner << ipad << acc << " += " << v << ";\n";
        else inner << ipad << "{ const float v = " << v << "; " << acc << " = kiln_" << comp.reduce_op << "(" << acc
                   << ", v); }\n";
        loops_close(inner, comp.reduce_sizes.size(), pad);
        os << inner.str();
        if (!comp.post_div_sizes.empty())
          os << pad << acc << " = " << acc << " / static_cast<double>(" << size_product(comp.post_div_sizes) << ");\n";
        os << pad << "b" << c << "[" << offset(c, row_idx, vars) << "] = static_cast<float>(" << acc << ");\n";
        accs[c] = "static_cast<float>(" + acc + ")";
      } else {
        // In the kernel's variables: the rows, then the stage's own loop (fusion::row_stage).
        const fusion::RowStage st = fusion::row_stage(p.program, k, c);
        std::vector<std::string> ivars = vars;
        loops_open(os, st.inner, k.outer.size(), pad, false, ivars);
        std::string ipad = pad + std::string(2 * st.inner.size(), ' ');
        std::string v = statement(os, ipad, st.body, ivars, accs, k.outer.size(), &comp);
        os << ipad << "b" << c << "[" << offset(c, st.index, ivars) << "] = " << v << ";  // " << cpp_comment(comp.name) << "\n";
        loops_close(os, st.inner.size(), pad);
      }
    }
    loops_close(os, k.outer.size(), "  ");
  }
};

}  // namespace

std::string emit_cpp(const fusion::FusedProgram& p, const std::vector<NodeNote>& notes, std::vector<KernelSpan>* spans) {
  Emitter em(p, KernelExpr::Dialect::Cpp);
  std::ostringstream os;
  os << "// Generated by Kiln's C++ backend. One function per fused kernel.\n"
     << "#include <cmath>\n#include <cstdint>\n\n"
     << "static inline int64_t kiln_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
     << "static inline int64_t kiln_mod(int64_t a, int64_t b) { int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n"
     << "static inline float kiln_relu(float a) { return a != a ? a : (a > 0.0f ? a : 0.0f); }\n"
     << "static inline float kiln_pow2(float x) { return x * x; }\n"
     << "static inline float kiln_pow3(float x) { return x * x * x; }\n"
     << "static inline float kiln_max(float a, float b) { return (a != a || a > b) ? a : b; }\n"
     << "static inline float kiln_min(float a, float b) { return (a != a || a < b) ? a : b; }\n\n";
  for (const auto& c : p.program.comps)
    if (c.dtype == ir::DType::Float16 || c.dtype == ir::DType::BFloat16) {
      os << kHalfTypes;
      break;
    }
  for (const auto& k : p.kernels) {
    const size_t begin = static_cast<size_t>(os.tellp());
    em.comment_nodes(os, k, notes);
    os << "extern \"C\" void " << k.name << "(void* const* buf, const double* scalar, const int64_t* sym) {\n";
    os << "  (void)scalar; (void)sym;\n";
    em.declare_buffers(os, k, ctype, "buf");
    em.extent_of.clear();  // no loop variable of another kernel
    if (k.kind == FusedKernel::Kind::Row) em.row_kernel(os, k);
    else em.pointwise_kernel(os, k);
    os << "}\n";
    if (spans) spans->push_back({k.name, begin, static_cast<size_t>(os.tellp())});
    os << "\n";
  }
  return os.str();
}

}  // namespace kiln::codegen

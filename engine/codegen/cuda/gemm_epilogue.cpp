#include "engine/codegen/cuda/gemm_epilogue.h"

#include <functional>
#include <sstream>

#include "engine/codegen/kernel_expr.h"

namespace kiln::codegen {

namespace {

const char* element_type(ir::DType t) { return t == ir::DType::Bool ? "bool" : "float"; }

}  // namespace

std::optional<GemmEpilogue> gemm_epilogue(const fusion::FusedProgram& p, int gemm, const fusion::FusedKernel& tail,
                                          const std::string& prelude) {
  const auto& comps = p.program.comps;
  if (tail.kind != fusion::FusedKernel::Kind::Pointwise || tail.comps.empty()) return std::nullopt;
  const Comp& g = comps[gemm];
  if (g.dtype != ir::DType::Float32 || g.sizes.empty() || !g.layout.empty()) return std::nullopt;
  auto same_shape = [&](const Comp& c) {
    if (c.sizes.size() != g.sizes.size() || !c.layout.empty()) return false;
    for (size_t d = 0; d < c.sizes.size(); ++d)
      if (capture::sym_str(c.sizes[d]) != capture::sym_str(g.sizes[d])) return false;
    return true;
  };
  bool ok = true, reads_gemm = false;
  std::function<void(const VExpr&)> walk = [&](const VExpr& e) {
    if (!e || !ok) return;
    if (e->op == VExprNode::Op::Load && e->comp == gemm) {
      reads_gemm = true;
      for (size_t d = 0; d < e->index.size(); ++d)
        if (e->index[d]->op != IExprNode::Op::Var || e->index[d]->var != static_cast<int>(d)) ok = false;
    }
    // Types other than float32 and bool stay in their own kernel (the template spells only those).
    if (e->op == VExprNode::Op::Load && comps[e->comp].dtype != ir::DType::Float32 &&
        comps[e->comp].dtype != ir::DType::Bool)
      ok = false;
    walk(e->a);
    walk(e->b);
    walk(e->c);
  };
  for (int c : tail.comps) {
    if (!same_shape(comps[c]) || (comps[c].dtype != ir::DType::Float32 && comps[c].dtype != ir::DType::Bool)) return std::nullopt;
    walk(comps[c].body);
  }
  if (!ok || !reads_gemm) return std::nullopt;

  KernelExpr em(p, KernelExpr::Dialect::Cuda);
  std::ostringstream os;
  const std::string pad = "          ";
  // The element's index: gc is the last dim; gr spans the others, row-major.
  const size_t rank = g.sizes.size();
  std::vector<std::string> vars;
  for (size_t d = 0; d < rank; ++d) vars.push_back("i" + std::to_string(d));
  os << pad << "{\n";
  os << pad << "  const long long i" << rank - 1 << " = gc;\n";
  std::string rest = "gr";
  for (size_t d = rank - 1; d-- > 0;) {
    if (d == 0) {
      os << pad << "  const long long i0 = " << rest << ";\n";
    } else {
      os << pad << "  const long long i" << d << " = " << rest << " % " << em.size(g.sizes[d]) << ";\n";
      os << pad << "  const long long q" << d << " = " << rest << " / " << em.size(g.sizes[d]) << ";\n";
      rest = "q" + std::to_string(d);
    }
  }
  std::ostringstream decl;
  em.declare_buffers(decl, tail, element_type, "args.buf");
  std::istringstream lines(decl.str());
  for (std::string l; std::getline(lines, l);) os << pad << l << "\n";
  os << pad << "  const double* scalar = args.scalar; const long long* sym = args.sym; (void)scalar; (void)sym;\n";
  em.load_hook = [&](const VExpr& e, const std::vector<std::string>&) -> std::string {
    return e->comp == gemm ? "v" : "";
  };
  for (int c : tail.comps) {
    std::vector<lowering::IExpr> idx;
    for (size_t d = 0; d < rank; ++d) idx.push_back(lowering::ie_var(static_cast<int>(d)));
    std::string value = em.statement(os, pad + "  ", comps[c].body, vars, {}, 0);
    os << pad << "  b" << c << "[" << em.offset(c, idx, vars) << "] = " << value << ";  // "
       << cpp_comment(comps[c].name) << "\n";
  }
  os << pad << "}\n";
  GemmEpilogue epi;
  epi.prelude = prelude;
  epi.code = os.str();
  epi.kernel = tail.name;
  return epi;
}

}  // namespace kiln::codegen

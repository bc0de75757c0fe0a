// The row forms of a region's CUDA kernels (fused kernels whose computations reduce along rows):
// one block per row, one warp per row (the row held in registers when every loop of the row walks
// one constant shape), or one thread per row; two reductions of a row in one pass (online softmax,
// Welford) where the loop IR allows. RowKernelEmitter is the base of emit_cuda.cpp's emitter, which
// adds the pointwise and transposing forms; both decompose flat indices with unflatten.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "engine/codegen/kernel_expr.h"
#include "engine/fusion/schedule.h"

namespace kiln::codegen {

// A dtype's storage type in generated CUDA (kiln_half / kiln_bf16 for the 16-bit floats, whose math is float).
const char* ctype(ir::DType t);

struct RowKernelEmitter : KernelExpr {
  using KernelExpr::KernelExpr;

  // Decomposes a flat index into the loop variables of `sizes`, first var `first`: row-major, or
  // along `order` (a storage order, outermost first) so consecutive flat indices walk memory.
  void unflatten(std::ostringstream& os, const std::string& flat, const std::vector<Sym>& sizes, size_t first,
                 const std::string& pad, std::vector<std::string>& vars, std::vector<int> order = {});

  // Structural equality of value expressions (index expressions: lowering::ie_equal): the one-pass
  // forms below need to know that two reductions read the very same values.
  bool same_value(const VExpr& a, const VExpr& b);
  bool same_sizes(const std::vector<Sym>& a, const std::vector<Sym>& b);
  // Whether a computation after c in row kernel k reads c: the forms then hold the warp or block
  // at a barrier after c's stage, since its elements were written by other lanes or threads.
  bool read_later(const fusion::FusedKernel& k, int c) const;
  // e is a Load of reduction c at the row's own index (vars 0..outer-1).
  static bool row_load(const VExpr& e, int c, size_t outer);

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
  RowPass row_pass(const fusion::FusedKernel& k, size_t i);

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
  std::vector<HeldLoad> held_loads(const fusion::FusedKernel& k, std::vector<Sym>& shape, int64_t& per_lane);
  static const HeldLoad* find_held(const std::vector<HeldLoad>& held, const VExpr& e);

  // The warp form with the row in registers (held_loads): each lane first reads its share of every
  // held value, all loads in flight at once, then every loop over the row runs from registers,
  // unrolled; the reductions run one loop each (two passes over registers cost less than the
  // one-pass forms' per-value division or exp, and give the plain two-loop results).
  void register_row(std::ostringstream& os, const fusion::FusedKernel& k, const std::vector<HeldLoad>& held,
                    const std::vector<Sym>& shape, int64_t per_lane);

  // One block per row (block reductions), or with `warp` one warp per row, blockDim/32 rows per
  // block (warp-shuffle reductions only: short rows do not idle most of a block).
  void row(std::ostringstream& os, const fusion::FusedKernel& k, bool warp = false);
};

// One thread per row: every loop of the row runs serially in its thread, so neighbouring
// threads handle neighbouring rows (a column reduction's rows are neighbours in memory).
void emit_column(RowKernelEmitter& em, std::ostringstream& os, const fusion::FusedKernel& k);

// Rows in tiles of `width` (kernel_mapping.h's RowTile): lane l of a block takes
// row tile * width + l, counted in the storage order of the reductions' output as emit_column
// does, and slice s of blockDim / width walks the row's values s, s + slices, ...; the slices'
// partial results meet by warp shuffles within each warp, then in shared memory in warp order
// (the same result on every run), and every
// thread ends with the row's value (a later reduction of the kernel may read it); a pointwise
// computation of one element per row is written by the first slice.
void emit_row_tiles(RowKernelEmitter& em, std::ostringstream& os, const fusion::FusedKernel& k, int width);

}  // namespace kiln::codegen

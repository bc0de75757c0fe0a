// Fusion: decides which loop-IR computations get a buffer and which kernels compute them.
//
// schedule(program, options)
//   pre:  program verifies (lowering's output).
//   post: every computation is realized (has a buffer) or inlined into all its consumers;
//         realized pointwise/reduction computations are grouped into kernels: vertical fusion of
//         pointwise chains (inlining; a producer whose few consumers each read every element once
//         is recomputed in each when that moves fewer bytes than a buffer; one whose only reader is a
//         view reordering it in its own storage order for several kernels, or permuting it for several
//         pointwise kernels that each walk its memory in order through the view, is stored itself and the
//         view read through; one whose only reader is a view that extern calls alone read, keeping each
//         element where its buffer does, is stored and the view is that buffer permuted, buffer_views), pointwise prologues
//         inlined into reductions, reductions
//         over the same rows and their pointwise epilogue in one row kernel (softmax, layer_norm),
//         with the pointwise kernel just before them as the row kernel's first stage when the
//         reductions read it along their rows (a residual add before its layer_norm) and epilogues
//         whose sizes fold the rows into fewer dims (layer_norm's output viewed 2-d for a linear),
//         the pointwise tail after an extern GEMM/conv in one kernel, and independent pointwise
//         kernels over the same range merged (horizontal fusion). Every producer/consumer pair
//         that stays apart is recorded with the reason.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/lowering/loop_ir.h"

namespace kiln::fusion {

using lowering::Comp;
using lowering::LoopProgram;
using lowering::Sym;

struct FusionOptions {
  bool fuse = true;         // false: every computation is its own kernel (the aot_eager check)
  int inline_limit = 160;   // largest inlined expression (nodes) before a producer gets a buffer
  int recompute_limit = 48; // largest expression recomputed in each of several consumers
  // Fewest rows (all sizes known) for which a row kernel takes in pointwise stages that would
  // otherwise run as kernels of their own (a prologue before the reductions, an epilogue folding the
  // rows): with fewer, the stage's elements would spread over too few warps or threads.
  int stage_rows = 256;
};

// A pointwise computation of a row kernel seen in the kernel's variables: the sizes its loop walks
// after the rows, its body and its own index (for its store) over vars 0..outer-1 (the row) and
// outer.. (the loop). Identity for a computation whose sizes start with the rows.
struct RowStage {
  std::vector<Sym> inner;
  lowering::VExpr body;
  std::vector<lowering::IExpr> index;
};

struct FusedKernel {
  enum class Kind { Pointwise, Row };
  Kind kind = Kind::Pointwise;
  std::string name;                 // "k2_softmax"
  std::vector<int> comps;           // realized computations it computes, in order
  std::vector<Sym> outer;           // Row: the rows' index space (the reductions' output sizes)
  std::vector<std::string> nodes;   // IR nodes fused into it (provenance)
  // Row: pointwise stages whose sizes fold the rows (outer [8, 128] for a computation [1024, 768]),
  // seen in the kernel's variables (row_stage).
  std::map<int, RowStage> folded;
};

RowStage row_stage(const LoopProgram& program, const FusedKernel& k, int comp);
// Whether pointwise computation `comp` of row kernel k runs before its first reduction (a prologue
// the reductions read back, written before them).
bool row_prologue(const LoopProgram& program, const FusedKernel& k, int comp);
// Whether e reads some computation at four or more positions: a window's taps (a generated depthwise convolution's,
// lowering::LowerOptions::depthwise); two or three, as a rotation's halves or a difference of neighbours, are not one.
bool reads_a_window(const lowering::VExpr& e);
// Whether e reads a convolution's window: two computations each at four or more positions (the input's taps and the
// filter's), where a pooling's window reads only its input at its taps.
bool reads_a_convolution_window(const lowering::VExpr& e);

struct Step {
  enum class Kind { Kernel, Extern };
  Kind kind = Kind::Kernel;
  int index = -1;  // kernel index, or the extern/fallback computation
};

struct Decision {
  std::string first, second;
  bool fused = false;
  std::string reason;
};

struct FusedProgram {
  LoopProgram program;            // bodies of realized computations with inlined loads substituted
  std::vector<bool> realized;     // per computation
  // Views only extern calls read that keep each element where a stored computation's buffer does: no kernel computes
  // them, each is that buffer permuted (view dim k is the source's dim dims[k]). By view computation.
  struct BufferView {
    int source = -1;
    std::vector<int64_t> dims;
  };
  std::map<int, BufferView> buffer_views;
  std::vector<FusedKernel> kernels;
  std::vector<Step> steps;
  std::vector<Decision> decisions;
};

FusedProgram schedule(const LoopProgram& program, const FusionOptions& options = {});

// The computation whose buffer is view c's (FusedProgram::buffer_views), or -1.
int view_source(const FusedProgram& p, int c);

std::string fused_program_text(const FusedProgram& p);  // kernels and steps, for dumps and tests
std::string decisions_text(const FusedProgram& p);

}  // namespace kiln::fusion

// Long reductions over few rows, split in two (the GPU's squeeze-excitation and global poolings).
//
// A channels-last pooling reduces each channel over its H x W values, which lie C floats apart: the GPU
// reads such rows in tiles of neighbouring channels (codegen/cuda/kernel_mapping.h's RowTile), one block per
// tile. With few rows and long ones (efficientnet_b0 at batch 8: 256 channels of 112 x 112) there are only
// tens of tiles for a GPU of 132 multiprocessors, and the pooling took 20 us where its bytes take 4. Split,
// a first reduction sums S parts of every row (S x more rows, each S x shorter: enough tiles to fill the
// GPU) into float32 partials, and the reduction itself then sums each row's S partials in a fixed order
// (deterministic, as one pass would be; a mean still divides by the whole row's size).
//
// split_long_reductions(region)
//   pre:  region.program verifies; layouts are chosen (channels_last.h), fusion has not run.
//   post: every floating-point Reduction comp R with constant sizes, a sum, max or min, fewer than 1024
//         rows of at least 2048 values and a million values in all, whose every load reads its input
//         with R's last output variable as the input's innermost stored index (its rows are neighbours
//         in memory), and whose first reduced size has a divisor S (2..64) with parts of at least 128
//         values (the smallest with rows x S >= 8192, else the largest) and rows x S >= 2048, is
//         preceded by a new Reduction comp P (float32, sizes [S] + R's, reducing R's reduced sizes with
//         the first divided by S; P[s, ...] is R's reduction over part s of that first reduced dim), and
//         R reduces P over [S] instead (its op, dtype, name, mean division and readers unchanged). Comp
//         indices after P shift by one everywhere (loads, deps, operands, outputs, tensor_of). Returns
//         one note line ("# split reduction: ...") per split comp. Integer reductions stay one pass.
#pragma once

#include <string>
#include <vector>

#include "engine/lowering/lower_graph.h"

namespace kiln::lowering {

std::vector<std::string> split_long_reductions(LoweredRegion& region);

}  // namespace kiln::lowering

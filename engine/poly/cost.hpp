// The cost of a block, in closed form from the signature (Tapestry's constant marginal costs).
//   BlockCost c = block_cost(sig, block);       // flops, bytes of each operand slice
//   c.flops == sig.flops_per_point * block.volume()
//   std::vector<Marginal> m = marginal_costs(sig);  // per index dim: cost of one more step
// Bytes come from the projections' images, so a halo or a broadcast input is priced exactly.
#pragma once

#include <vector>

#include "engine/poly/signature.hpp"

namespace tapestry::poly {

struct BlockCost {
  double flops = 0;
  std::vector<double> input_bytes;  // the slice of each input the block reads (clipped)
  double output_bytes = 0;          // the slice it writes (a partial one when it splits a reduction)
  double bytes() const;             // all of them
};

BlockCost block_cost(const Signature& s, const Box& block);

// d(cost)/d(extent_j) at the whole space, from the closed forms
//   flops = f * prod_j e_j,   bytes = size * prod_t (sum_j |A_tj| (e_j - 1) + w_t)
// (unclipped: a cat input is priced as if it spanned the whole space).
struct Marginal {
  double flops = 0;
  std::vector<double> input_bytes;
  double output_bytes = 0;
};
std::vector<Marginal> marginal_costs(const Signature& s);

}  // namespace tapestry::poly

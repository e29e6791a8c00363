-- A coupled-cluster style contraction chain, where the order of the pairwise contractions
-- decides the cost: tp.einsum chooses it (as opt_einsum does) and tp.einsum_path shows it.
-- Run it with:  tapestry scripts/contraction.lua
local o, v = 8, 24   -- occupied and virtual orbitals

-- The quadratic CCD term R[i,j,a,b] = sum_{k,l,c,d} V[k,l,c,d] T[i,j,c,d] T[k,l,a,b].
-- Left to right, T x T first has no index in common: an o^4 v^4 outer product. Contracting
-- V with T over c,d first leaves an o^4 intermediate, and the rest is cheap.
local V = tp.randn({o, o, v, v}, {seed = 1, dtype = "f64"})
local T = tp.randn({o, o, v, v}, {seed = 2, dtype = "f64"}) * 0.1
local spec = "klcd,ijcd,klab->ijab"

local order, naive, flops = tp.einsum_path(spec, V, T, T)
print(string.format("einsum('%s') with o = %d, v = %d", spec, o, v))
print("order chosen:")
for step, pair in ipairs(order) do
  print(string.format("  %d. contract operands %d and %d: %s", step, pair[1], pair[2], pair.spec))
end
print(string.format("flops: %.3g in one naive loop nest, %.3g in this order: %.0fx fewer",
                    naive, flops, naive / flops))

local t0 = tp.clock()
local r = tp.eval(tp.einsum(spec, V, T, T))
print(string.format("computed {%s} in %.1f ms", table.concat(r.shape, ","), (tp.clock() - t0) * 1e3))

-- The same by hand as two matmuls over flattened index pairs: (kl)(cd) x (ij)(cd) -> (kl)(ij),
-- then (ij)(kl) x (kl)(ab) -> (ij)(ab).
local Vm, Tm = V:reshape{o * o, v * v}, T:reshape{o * o, v * v}
local w = Vm:matmul(Tm:t())                                  -- {kl, ij}
local by_hand = w:t():matmul(Tm):reshape{o, o, v, v}
print(string.format("max difference from two explicit matmuls: %.2e",
                    (r - by_hand):abs():max():item()))

-- A matrix chain, the classic case: (2048x64)(64x2048)(2048x64). Left to right makes a
-- 2048x2048 intermediate; right to left keeps everything 64 wide.
local a = tp.randn{2048, 64}
local b = tp.randn{64, 2048}
local c = tp.randn{2048, 64}
local order2, naive2, flops2 = tp.einsum_path("ij,jk,kl->il", a, b, c)
print(string.format("\neinsum('ij,jk,kl->il') on 2048x64, 64x2048, 2048x64: first %s, then %s",
                    order2[1].spec, order2[2].spec))
local left_to_right = 2 * (2048 * 64 * 2048) + 2 * (2048 * 2048 * 64)
print(string.format("flops: %.3g in this order vs %.3g left to right (%.0fx fewer; naive nest %.3g)",
                    flops2, left_to_right, left_to_right / flops2, naive2))

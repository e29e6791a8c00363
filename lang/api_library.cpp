// The registry's entries for operators, gradients, linalg, fft, the standard library and shell commands (the
// registry: lang/api.hpp; the table's shorthand: lang/api_table.hpp).
#include "lang/api_table.hpp"

namespace tapestry::api_table {

namespace {

const ApiEntry kEntries[] = {
    // --- operators --------------------------------------------------------------------
    META("__add", (l_binary<Op::Add>), "a + b", "tp.add"),
    META("__sub", (l_binary<Op::Sub>), "a - b", "tp.sub"),
    META("__mul", (l_binary<Op::Mul>), "a * b", "tp.mul (elementwise)"),
    META("__div", (l_binary<Op::Div>), "a / b", "tp.div (true division)"),
    META("__mod", (l_binary<Op::Mod>), "a % b", "tp.mod"),
    META("__pow", (l_binary<Op::Pow>), "a ^ b", "tp.pow"),
    META("__idiv", (l_binary<Op::FloorDiv>), "a // b", "tp.floordiv"),
    META("__unm", (l_unary<Op::Neg>), "-a", "tp.neg"),
    META("__tostring", lua::l_tostring, "tostring(x) / print(x)",
         "Observe and format numpy-style, with a footer giving dtype and shape (and, on several ranks, how "
         "the value is split). Over the print threshold only the printed corners are gathered "
         "(tp.set_printoptions)."),
    META("__len", lua::l_len, "#x", "Size of dim 1."),
    // Documentation only (no binding): Lua turns whatever __eq returns into a boolean.
    {"Tensor.__eq", K::Metamethod, "operators", "a == b (not elementwise)",
     "Lua's == cannot give a tensor: on two tensors it is a plain boolean, true only for the same "
     "tensor (false for equal values), and x == 0 is always false (Lua never asks Tapestry about a "
     "tensor and a number). For elementwise comparison use tp.eq(a, b) / a:eq(b) (and ne, lt, le, gt, "
     "ge), e.g. x:eq(0):any():item().",
     nullptr},

    // --- gradients ------------------------------------------------------------------
    {"tp.grad", K::Function, "grad", "tp.grad(loss, {p1, p2, ...})",
     "Reverse-mode gradients of a one-element f32/f64 loss with respect to each tensor p_i "
     "(named tensors or any tensors the loss was built from), as a sequence of lazy tensors of "
     "the params' shapes and dtypes: more graph, planned, fused and sharded like the rest. A "
     "param the loss does not depend on gets zeros; integer and bool params are errors. Complex "
     "params and complex values on the way (tp.fft included) follow torch: the gradient of a "
     "complex z = a + ib is dL/da + i dL/db. Ties in "
     "max/min/maximum/minimum/maxpool split the gradient evenly (see docs/gradients.md). "
     "Example: local g = tp.grad((x:matmul(tp.env.w) - y):square():mean(), {tp.env.w})",
     lua::l_grad},
    {"tp.detach", K::Function, "grad", "tp.detach(a, b, ...)",
     "Observe the tensors together and return each value as a new leaf tensor with no graph "
     "behind it: gradients stop there and the graph that computed it can be freed. Use it to "
     "make a parameter of a constant (tp.env.b = tp.detach(tp.zeros{n})), and after each "
     "optimizer step (nn.sgd and nn.adam do). Under a driver's MPI job each result's pieces get "
     "buddy replicas in the same request, as a tp.env binding's do: a detached value has no "
     "lineage once its inputs are rebound, so a lost rank must not take its only copy.",
     lua::l_detach},

    // --- linear algebra (LAPACKE over OpenBLAS; require "tapestry.linalg" has these too) ---
    {"tp.linalg.solve", K::Function, "linalg", "tp.linalg.solve(a, b)",
     "x with a x = b (numpy.linalg.solve, LAPACK gesv). a {..., n, n}; b {n} (a vector: x {..., "
     "n}) or {..., n, k} (x {..., n, k}); batch dims broadcast as numpy 2's. Integers compute in "
     "f64. A singular a is an error when the value is computed. Differentiable in a and b.",
     lua::l_linalg_solve},
    {"tp.linalg.inv", K::Function, "linalg", "tp.linalg.inv(a)",
     "The inverse of each matrix of a {..., n, n}: solve(a, I). Differentiable.", lua::l_linalg_inv},
    {"tp.linalg.det", K::Function, "linalg", "tp.linalg.det(a)",
     "Determinant of each matrix of a {..., n, n} -> {...}, from its LU factorization (getrf); "
     "0 for an exactly singular matrix. Differentiable (g det a^-T).",
     lua::l_linalg_det},
    {"tp.linalg.slogdet", K::Function, "linalg", "tp.linalg.slogdet(a)",
     "Returns sign, logabsdet (each {...}) with det = sign * exp(logabsdet), as numpy: no "
     "overflow for large matrices; a singular matrix gives 0, -inf. Differentiable in logabsdet.",
     lua::l_linalg_slogdet},
    {"tp.linalg.cholesky", K::Function, "linalg", "tp.linalg.cholesky(a)",
     "Lower-triangular l with l @ l^T = a for a symmetric positive definite a {..., n, n} "
     "(potrf; only the lower triangle of a is read). Not positive definite is an error when "
     "computed. Differentiable.",
     lua::l_linalg_cholesky},
    {"tp.linalg.qr", K::Function, "linalg", "tp.linalg.qr(a [,mode])",
     "Returns q, r with a = q @ r, q orthonormal columns, r upper triangular (geqrf, orgqr). a "
     "{..., m, n}, k = min(m, n); mode 'reduced' (default, numpy's): q {..., m, k}, r {..., k, "
     "n}; 'complete': q {..., m, m}, r {..., m, n}.",
     lua::l_linalg_qr},
    {"tp.linalg.svd", K::Function, "linalg", "tp.linalg.svd(a [,opts])",
     "Returns u, s, vh with a = u @ diag(s) @ vh, s descending (gesdd), as numpy.linalg.svd. a "
     "{..., m, n}, k = min(m, n); opts.full_matrices (default true): u {..., m, m}, vh {..., n, "
     "n}, else {..., m, k} and {..., k, n}; opts.compute_uv = false returns s alone. The signs "
     "of singular vectors are LAPACK's. Differentiable as torch (only U's first k columns and Vh's first k "
     "rows count; exact for distinct singular values: at a repeated one, through U or Vh, inf or NaN).",
     lua::l_linalg_svd},
    {"tp.linalg.eigh", K::Function, "linalg", "tp.linalg.eigh(a)",
     "Returns w, v: the eigenvalues ascending {..., n} and the eigenvectors as columns {..., n, "
     "n} of a symmetric a (syevd; only the lower triangle is read, numpy's UPLO='L'). Differentiable as "
     "torch: the gradient is symmetric, and exact for distinct eigenvalues (at a repeated one, through "
     "v, inf or NaN; through w alone it stays exact).",
     lua::l_linalg_eigh},
    {"tp.linalg.eigvalsh", K::Function, "linalg", "tp.linalg.eigvalsh(a)",
     "The eigenvalues of a symmetric a {..., n, n}, ascending {..., n} (syevd without vectors). "
     "Differentiable: g a = v diag(g) v^T.",
     lua::l_linalg_eigvalsh},

    // --- tp.fft: numpy.fft through FFTW3 (docs/fft.md) --------------------------------------
    {"tp.fft.fft", K::Function, "fft", "tp.fft.fft(x [,opts])",
     "The discrete Fourier transform along one dim, numpy.fft.fft: opts.dim (1-based, default the "
     "last), opts.n (cut or zero-padded to n), opts.norm ('backward' default: unscaled; 'ortho': "
     "1/sqrt(n); 'forward': 1/n). Real x gives c64 (f32, f16, bf16) or c128 (f64, integers), as numpy "
     "2. The dim is read whole: along a sharded dim the plan moves the lines together first.",
     lua::l_fft_fft},
    {"tp.fft.ifft", K::Function, "fft", "tp.fft.ifft(x [,opts])",
     "The inverse transform (e^+i), numpy.fft.ifft: opts as tp.fft.fft ('backward' scales by 1/n here).",
     lua::l_fft_ifft},
    {"tp.fft.rfft", K::Function, "fft", "tp.fft.rfft(x [,opts])",
     "The transform of real x, its n/2+1 non-negative frequencies (numpy.fft.rfft); opts as tp.fft.fft. "
     "Complex x is refused.",
     lua::l_fft_rfft},
    {"tp.fft.irfft", K::Function, "fft", "tp.fft.irfft(x [,opts])",
     "The real inverse of rfft (numpy.fft.irfft): opts.n the output length (default 2 * (m - 1) for m "
     "inputs), opts.dim, opts.norm. The imaginary parts of the zero (and Nyquist) terms are ignored.",
     lua::l_fft_irfft},
    {"tp.fft.fft2", K::Function, "fft", "tp.fft.fft2(x [,opts])",
     "The transform over two dims (numpy.fft.fft2): opts.dims (default the last two), opts.s (sizes, "
     "as n per dim), opts.norm.",
     lua::l_fft_fft2},
    {"tp.fft.ifft2", K::Function, "fft", "tp.fft.ifft2(x [,opts])", "The inverse of fft2; opts as fft2.",
     lua::l_fft_ifft2},
    {"tp.fft.fftn", K::Function, "fft", "tp.fft.fftn(x [,opts])",
     "The transform over opts.dims (default all) with sizes opts.s, one dim after another "
     "(numpy.fft.fftn).",
     lua::l_fft_fftn},
    {"tp.fft.ifftn", K::Function, "fft", "tp.fft.ifftn(x [,opts])", "The inverse of fftn; opts as fftn.",
     lua::l_fft_ifftn},
    {"tp.fft.fftfreq", K::Function, "fft", "tp.fft.fftfreq(n [,d])",
     "The sample frequencies of an n-point transform with spacing d (default 1), f64: {0, 1, ..., "
     "-(n//2), ..., -1} / (d n) (numpy.fft.fftfreq).",
     lua::l_fft_fftfreq},
    {"tp.fft.rfftfreq", K::Function, "fft", "tp.fft.rfftfreq(n [,d])",
     "The non-negative frequencies of rfft: {0, 1, ..., n//2} / (d n), f64.", lua::l_fft_rfftfreq},
    {"tp.fft.fftshift", K::Function, "fft", "tp.fft.fftshift(x [,dims])",
     "The zero frequency moved to the centre: a roll by size//2 along dims (default all; "
     "numpy.fft.fftshift).",
     lua::l_fft_fftshift},
    {"tp.fft.ifftshift", K::Function, "fft", "tp.fft.ifftshift(x [,dims])", "The inverse of fftshift.",
     lua::l_fft_ifftshift},

    // --- the Lua standard library (stdlib/*.lua, embedded; require "tapestry.nn") ------
    {"tapestry.nn.linear", K::Module, "stdlib", "nn.linear(x, w [,b])",
     "x·w + b, with x {..., in}, w {in, out} (in-by-out, so it reads as written) and b {out} "
     "or a number. local nn = require 'tapestry.nn'",
     nullptr},
    {"tapestry.nn.mlp", K::Module, "stdlib", "nn.mlp(x, layers [,act])",
     "A multi-layer perceptron: linear layers with act between them, not after the last (the "
     "output is raw logits). layers is a sequence of {w = W, b = B} or {W, B} (b optional); act "
     "is a function or a tp function's name, default tp.relu. Example: nn.mlp(x, {{w = w1, b = "
     "b1}, {w = w2, b = b2}}, 'gelu')",
     nullptr},
    {"tapestry.nn.softmax", K::Module, "stdlib", "nn.softmax(x [,d])",
     "exp(x) / sum(exp(x)) along d (default -1), stable: the max along d is subtracted first, "
     "so softmax{1000, 1001} == softmax{0, 1}.",
     nullptr},
    {"tapestry.nn.log_softmax", K::Module, "stdlib", "nn.log_softmax(x [,d])",
     "log(softmax(x, d)) as (x - m) - log(sum(exp(x - m))), m the max along d (default -1): "
     "finite where log of an underflowed softmax would be -inf.",
     nullptr},
    {"tapestry.nn.layernorm", K::Module, "stdlib", "nn.layernorm(x [,opts])",
     "Layer normalization over the last dim: (x - mean) / sqrt(var + eps) * weight + bias, "
     "biased variance as Torch. opts.eps (default 1e-5), opts.weight and opts.bias ({last dim} "
     "or numbers).",
     nullptr},
    {"tapestry.nn.cross_entropy", K::Module, "stdlib", "nn.cross_entropy(logits, labels [,opts])",
     "Cross-entropy of logits {N, C} or {N, C, d1, ...}, through log_softmax (stable). labels: "
     "1-based class indices (an i32/i64 tensor {N, d1, ...} or a Lua sequence), which is "
     "nn.nll_loss(nn.log_softmax(logits, 2), labels, opts); or targets of logits' shape (one-hot "
     "or probabilities, float or bool). opts: weight {C}, reduction ('mean', 'sum', 'none'), "
     "ignore_index (class indices only). An index outside 1..C is an error when evaluated.",
     nullptr},
    {"tapestry.nn.nll_loss", K::Module, "stdlib", "nn.nll_loss(logp, labels [,opts])",
     "Negative log-likelihood of 1-based class indices (torch's nll_loss): logp {N, C} or {N, C, "
     "d1, ...} of log-probabilities, labels i32/i64 {N, d1, ...} (or a Lua sequence). opts.weight "
     "{C} weighs each class; opts.ignore_index is a label that counts for nothing; "
     "opts.reduction: 'mean' (default: sum of w[y]*loss over sum of w[y]), 'sum' or 'none'. A "
     "label outside 1..C is an error when evaluated.",
     nullptr},
    {"tapestry.nn.embedding", K::Module, "stdlib", "nn.embedding(indices, weight)",
     "The rows of weight {V, D} at 1-based integer indices of any shape (a tensor or a Lua "
     "sequence): indices' shape followed by D. A gather (tp.index_select); the gradient adds "
     "each picked row's gradient into its row.",
     nullptr},
    {"tapestry.nn.dropout", K::Module, "stdlib", "nn.dropout(x, p [,opts])",
     "Inverted dropout: each element zeroed with probability p, the rest scaled by 1/(1-p). The "
     "mask is tp.rand(x's shape) >= p keyed by (seed, element index), so the same seed gives the "
     "same mask on any mesh. opts.seed (default: the session's next seed, as tp.rand), "
     "opts.training (default true; false returns x).",
     nullptr},
    {"tapestry.nn.batchnorm", K::Module, "stdlib", "nn.batchnorm(x [,opts])",
     "Batch normalization over the channels (dim 2) of x {N, C, ...}: (x - mean) / sqrt(var + "
     "eps) * weight + bias, with the batch mean and biased variance over every dim but 2 "
     "(training), or the running ones (opts.training = false). Returns y and, with "
     "running_mean/running_var, their new values (1 - momentum) * running + momentum * batch "
     "(unbiased variance, as torch): y, rm, rv = nn.batchnorm(x, {running_mean = rm, running_var "
     "= rv}); tp.env.rm, tp.env.rv = tp.detach(rm, rv). opts: weight, bias, running_mean, "
     "running_var ({C}), training, momentum (0.1), eps (1e-5).",
     nullptr},
    {"tapestry.nn.conv1d", K::Module, "stdlib", "nn.conv1d(x, w [,opts])",
     "1-D convolution (cross-correlation, as torch) of x {N, C, L} (or {C, L}) with w {O, C/groups, "
     "K}: {N, O, OL}. tp.conv2d over a height of 1, so it shards and differentiates as conv2d. "
     "opts: stride, padding (a number, 'valid' or 'same' with stride 1: torch's split, the odd "
     "element after), dilation, groups, bias {O}.",
     nullptr},
    {"tapestry.nn.conv2d", K::Module, "stdlib", "nn.conv2d(x, w [,opts])",
     "tp.conv2d with torch's options: x {N, C, H, W} or {C, H, W}, opts.bias {O}, padding a "
     "number, {h, w}, 'valid' or 'same' (any padding: what tp.conv2d cannot take is padded into x).",
     nullptr},
    {"tapestry.nn.conv3d", K::Module, "stdlib", "nn.conv3d(x, w [,opts])",
     "3-D convolution of x {N, C, D, H, W} (or {C, D, H, W}) with w {O, C/groups, KD, KH, KW}: "
     "{N, O, OD, OH, OW}. The KD depth taps of x are stacked along the channels and one tp.conv2d "
     "runs over the depth positions folded into the batch, so it shards and differentiates as "
     "conv2d. opts: stride, padding, dilation (each a number or {d, h, w}; padding also 'valid' "
     "or 'same'), groups, bias {O}.",
     nullptr},
    {"tapestry.nn.attention", K::Module, "stdlib", "nn.attention(q, k, v [,opts])",
     "Scaled dot-product attention softmax(q·kᵀ/sqrt(d) + mask)·v, q {..., Lq, d}, k {..., Lk, "
     "d}, v {..., Lk, dv}, leading dims broadcast. opts.mask: bool (true = may attend) or "
     "additive; opts.causal: query i sees keys 1..i; opts.scale. Returns the output and the "
     "weights.",
     nullptr},
    {"tapestry.nn.sgd", K::Module, "stdlib", "nn.sgd(params, grads, lr [,opts])",
     "One step of gradient descent on named tensors: tp.env[name] = p - lr * g for each param "
     "(a named Tensor such as tp.env.w, or its name) and its gradient from tp.grad, all "
     "computed in one observation, then detached. opts.momentum (default 0) keeps a velocity "
     "in tp.env.__sgd_v_NAME; opts.eval = {loss, ...} computes those tensors in the same "
     "observation (sharing the forward pass).",
     nullptr},
    {"tapestry.nn.adam", K::Module, "stdlib", "nn.adam(params, grads [,opts])",
     "One Adam step (Kingma & Ba, with bias correction) on named tensors, as nn.sgd. The "
     "moments and step count live in the environment as tp.env.__adam_m_NAME, __adam_v_NAME and "
     "__adam_t_NAME (so tp.save_env checkpoints them; drop them to reset). opts: lr (1e-3), "
     "beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (0, added to g as in Torch's Adam), "
     "eval.",
     nullptr},
    {"tapestry.fem.laplacian", K::Module, "stdlib", "fem.laplacian(u [,opts])",
     "The discrete Laplacian of an n-D grid (5-point in 2-D, 2n+1-point in n-D), u's shape. "
     "opts.boundary 'zero' (default), 'periodic' or 'reflect' as tp.stencil; opts.h the grid "
     "spacing (default 1). local fem = require 'tapestry.fem'",
     nullptr},
    {"tapestry.fem.heat_step", K::Module, "stdlib", "fem.heat_step(u, alpha [,opts])",
     "One explicit Euler step of the heat equation: u + alpha * laplacian(u), alpha = dt/h^2; "
     "stable for alpha <= 1/(2n) on an n-D grid. Conserves sum(u) with periodic boundaries. "
     "opts as fem.laplacian.",
     nullptr},
    {"tapestry.fem.jacobi", K::Module, "stdlib", "fem.jacobi(a, b [,opts])",
     "Jacobi iteration x <- x + (b - A x) / diag(A) for a dense square a (converges when it is "
     "diagonally dominant); b {n} or {n, k}. opts.tol (1e-6, relative residual), opts.maxiter "
     "(1000), opts.x0. Returns x, iterations, relative residual.",
     nullptr},
    {"tapestry.linalg.cg", K::Module, "stdlib", "linalg.cg(a, b [,opts])",
     "Conjugate gradients for A x = b, A symmetric positive definite: a matrix or a function v "
     "-> A v. opts.tol (1e-6, relative residual), opts.maxiter (default n), opts.x0. Returns x, "
     "iterations and the history of relative residuals. local linalg = require "
     "'tapestry.linalg'",
     nullptr},
    {"tapestry.linalg.power_iteration", K::Module, "stdlib", "linalg.power_iteration(a [,opts])",
     "The dominant eigenvalue (largest |lambda|, a Lua number) and unit eigenvector of a square "
     "matrix, by power iteration with the Rayleigh quotient. opts.tol (1e-6, relative change), "
     "opts.maxiter (1000), opts.seed (start vector). Returns lambda, v, iterations.",
     nullptr},
    {"tapestry.linalg.norm", K::Module, "stdlib", "linalg.norm(x [,p])",
     "numpy.linalg.norm(x, ord). p nil: the 2-norm of all of x (Frobenius for a matrix), scaled "
     "by max|x| so it does not overflow. A vector: any number p (0 counts nonzeros), math.huge / "
     "'inf' (max |x|), -math.huge (min |x|). Two dims or more with p given: the matrix norm of "
     "each matrix of the last two dims: 'fro', 'nuc' (sum of singular values), 2 / -2 (largest / "
     "smallest singular value), 1 / -1 (max / min column sum of |x|), math.huge / -math.huge "
     "(rows).",
     nullptr},
    {"tapestry.linalg.pinv", K::Module, "stdlib", "linalg.pinv(a [,opts])",
     "Pseudo-inverse of each matrix of a {..., m, n} -> {..., n, m} from its SVD; singular "
     "values <= opts.rcond (default 1e-15) times the largest count as zero, as numpy.",
     nullptr},
    {"tapestry.linalg.lstsq", K::Module, "stdlib", "linalg.lstsq(a, b [,opts])",
     "numpy.linalg.lstsq: x minimising ||b - a x|| (least-norm when a is rank deficient), from "
     "a's SVD; a {m, n}, b {m} or {m, k}; opts.rcond (default eps * max(m, n)). Returns x, the "
     "squared residual norms ({1} or {k}; always given, where numpy gives them only for m > n "
     "and full rank), the rank (i64) and the singular values.",
     nullptr},

    // --- shell commands (run by repl/) --------------------------------------------------
    {":help", K::Command, "shell", ":help [name]",
     "Help for a function, method or command; without a name, the list of topics.", nullptr},
    {":quit", K::Command, "shell", ":quit", "Leave the shell (Ctrl-D too).", nullptr},
    {":load", K::Command, "shell", ":load FILE", "Run a Lua script inside this session.", nullptr},
    {":plan", K::Command, "shell", ":plan [--blocks] EXPR",
     "Print the sharded plan of EXPR (tp.plan), one line per op; --blocks: every rank's program.", nullptr},
    {":explain", K::Command, "shell", ":explain EXPR",
     "Why the plan of EXPR was chosen: candidates and costs per op (tp.explain).", nullptr},
    {":layout", K::Command, "shell", ":layout NAME-or-EXPR",
     "Draw the shard map of a named tensor or an expression: which rank holds which block, in "
     "colour; n-D tensors as 2-D faces of their last two dims.",
     nullptr},
    {":mesh", K::Command, "shell", ":mesh", "Describe the allocation (tp.mesh).", nullptr},
    {":tensors", K::Command, "shell", ":tensors",
     "The environment: name, shape, dtype, bytes, layout of every named tensor.", nullptr},
    {":time", K::Command, "shell", ":time EXPR-or-STATEMENT",
     "Run it (an expression is also printed) and report the wall time per phase: plan, run, "
     "move (bytes and messages between ranks) and print.",
     nullptr},
    {":trace", K::Command, "shell", ":trace FILE / :trace off",
     "Start a Chrome/Perfetto trace into FILE, or finish it (as tp.trace).", nullptr},
};

}  // namespace

std::span<const ApiEntry> library_entries() { return kEntries; }

}  // namespace tapestry::api_table

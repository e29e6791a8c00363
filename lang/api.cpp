#include "lang/api.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "engine/ir/error.hpp"
#include "lang/bindings.hpp"

namespace tapestry {

namespace {

using lua::l_argreduce;
using lua::l_binary;
using lua::l_reduce;
using lua::l_unary;
using K = ApiKind;
constexpr bool M = true;  // also a Tensor method

#define UNARY(name, op, doc) \
  { "tp." name, K::Function, "map", "tp." name "(x) / x:" name "()", doc, l_unary<Op::op>, M }
#define BINARY(name, op, sym, doc) \
  { "tp." name, K::Function, "map", "tp." name "(a, b) / a:" name "(b)" sym, doc, l_binary<Op::op>, M }
#define META(name, op, usage, doc) \
  { "Tensor." name, K::Metamethod, "operators", usage, doc, op }

const ApiEntry kApi[] = {
    // --- create ---------------------------------------------------------------------
    {"tp.tensor", K::Function, "create", "tp.tensor(t [,opts])",
     "A tensor from a nested Lua table (or a number: a scalar). Defaults to f32; a table of "
     "booleans gives bool; an empty table is a size-0 dim (tp.tensor{} is f32 {0}, tp.tensor{{},{}} "
     "{2,0}). opts: dtype, name, storage, symmetry, tiles and nonzero (checked when evaluated, as "
     "x:declare). "
     "Example: "
     "tp.tensor{{1,2},{3,4}}",
     lua::l_tensor},
    {"tp.zeros", K::Function, "create", "tp.zeros(shape [,opts])",
     "All zeros. shape is a table of sizes, e.g. {2,3} ({0,3} is empty). opts: dtype (default f32), name, "
     "storage (\"memory\", the default, or \"disk\": made, then kept in a file and read when needed, as "
     "tp.place puts it; the creators all take it, not with symmetry, tiles or nonzero), "
     "symmetry (any group: zero is symmetric and antisymmetric), tiles and nonzero (block sparsity as "
     "x:declare; nonzero defaults to no tile). x:properties() says zero = true.",
     lua::l_zeros},
    {"tp.ones", K::Function, "create", "tp.ones(shape [,opts])",
     "All ones. opts: dtype, name, storage, symmetry (symmetric groups only), tiles and nonzero (every "
     "tile).",
     lua::l_ones},
    {"tp.full", K::Function, "create", "tp.full(shape, v [,opts])",
     "Every element equal to v (a number or boolean). opts: dtype, name, storage, symmetry (antisymmetric "
     "only for "
     "v = 0), tiles and nonzero (zero tiles only for v = 0).",
     lua::l_full},
    {"tp.eye", K::Function, "create", "tp.eye(n [,m] [,opts])",
     "The n x m identity (m defaults to n). opts: dtype, name, storage, symmetry, tiles and nonzero (nonzero "
     "must "
     "hold the tiles the diagonal crosses, and defaults to them). x:properties() says diagonal = true, "
     "and symmetric{1,2} when n = m.",
     lua::l_eye},
    {"tp.arange", K::Function, "create", "tp.arange(first, last [,step] [,opts])",
     "first, first+step, ... up to last inclusive, like a Lua numeric for: a range that runs no "
     "iteration (tp.arange(1, 0)) is empty. Example: tp.arange(1, 5) is [1. 2. 3. 4. 5.]. opts: dtype, name, "
     "storage.",
     lua::l_arange},
    {"tp.linspace", K::Function, "create", "tp.linspace(a, b, n [,opts])",
     "n evenly spaced points from a to b inclusive (n = 0: empty). opts: dtype (f32 or f64), name, storage.",
     lua::l_linspace},
    {"tp.rand", K::Function, "create", "tp.rand(shape [,opts])",
     "Uniform in [0,1) from a counter-based generator (Philox-4x32) keyed by (seed, element "
     "index): the same seed gives the same values on any mesh. opts: seed, dtype, name, storage, symmetry "
     "(tp.symmetric{1,2}: the upper triangle mirrored; tp.antisymmetric{1,2}: mirrored and negated, "
     "0 on the diagonal; tp.hermitian{1,2} of a complex dtype: mirrored and conjugated, the diagonal "
     "real; groups of 2 dims), tiles and nonzero (the values of the nonzero tiles only, the same as "
     "without the option; the mask must be symmetric in each group's dims).",
     lua::l_rand},
    {"tp.randn", K::Function, "create", "tp.randn(shape [,opts])",
     "Standard normal, keyed like tp.rand. opts: seed, dtype, name, storage, symmetry (as tp.rand).",
     lua::l_randn},
    {"tp.randint", K::Function, "create", "tp.randint(lo, hi, shape [,opts])",
     "Uniform integers from lo to hi inclusive (i64; opts.dtype 'i32' too), keyed like tp.rand "
     "(floor(u * (hi-lo+1)) + lo of an f64 uniform u), so the same seed gives the same values on "
     "any mesh; hi - lo + 1 may be at most 2^53. opts: seed, dtype, name, storage.",
     lua::l_randint},
    {"tp.logspace", K::Function, "create", "tp.logspace(a, b, n [,opts])",
     "n points base^a .. base^b inclusive, evenly spaced in the exponent (numpy.logspace; "
     "computed in f64). opts: base (default 10), dtype (f32 or f64), name, storage.",
     lua::l_logspace},
    {"tp.zeros_like", K::Function, "create", "tp.zeros_like(x [,opts])",
     "Zeros of x's shape and dtype. opts: dtype (another dtype), name, storage.", lua::l_zeros_like},
    {"tp.ones_like", K::Function, "create", "tp.ones_like(x [,opts])",
     "Ones of x's shape and dtype. opts: dtype, name, storage.", lua::l_ones_like},
    {"tp.full_like", K::Function, "create", "tp.full_like(x, v [,opts])",
     "v (a number or boolean, cast as x:cast would) in x's shape and dtype. opts: dtype, name, storage.",
     lua::l_full_like},
    {"tp.rand_like", K::Function, "create", "tp.rand_like(x [,opts])",
     "tp.rand of x's shape and dtype (a float dtype). opts: seed, dtype, name, storage.", lua::l_rand_like},
    {"tp.randn_like", K::Function, "create", "tp.randn_like(x [,opts])",
     "tp.randn of x's shape and dtype (a float dtype). opts: seed, dtype, name, storage.", lua::l_randn_like},
    {"tp.meshgrid", K::Function, "create", "tp.meshgrid(x1, x2, ... [,opts])",
     "numpy.meshgrid of 1-D tensors (also given as one table {x1, x2, ...}): returns one tensor "
     "per input, each of the shape {#x1, #x2, ...}, input i varying along dim i. opts.indexing: "
     "'xy' (numpy's default: the first two dims swapped, {#x2, #x1, ...}) or 'ij' (torch's). "
     "The results are broadcast views. Example: local X, Y = tp.meshgrid(x, y)",
     lua::l_meshgrid},
    {"tp.seed", K::Function, "create", "tp.seed([n])",
     "Sets the session's seed, used by tp.rand/randn without opts.seed (each such call "
     "advances it). Without n, returns the current seed.",
     lua::l_seed},

    // --- declared properties (docs/properties.md) ---------------------------------------
    {"tp.symmetric", K::Function, "properties", "tp.symmetric{d1, d2, ...}",
     "A permutational symmetry group: the tensor is unchanged when any two of dims d1, d2, ... (1-based, "
     "of equal sizes) are swapped. For the symmetry option of x:declare and the creators; a list of "
     "groups declares several: {tp.antisymmetric{1,2}, tp.antisymmetric{3,4}}. tostring: \"symmetric{1,2}\".",
     lua::l_symmetric},
    {"tp.antisymmetric", K::Function, "properties", "tp.antisymmetric{d1, d2, ...}",
     "A group under which the tensor changes sign when any two of the dims are swapped (so it is 0 "
     "where two of them are equal). As tp.symmetric.",
     lua::l_antisymmetric},
    {"tp.hermitian", K::Function, "properties", "tp.hermitian{d1, d2}",
     "A Hermitian pair of dims of a complex tensor (c64, c128): x[..i..j..] = conj(x[..j..i..]), so its "
     "diagonal is real. As tp.symmetric, but exactly two dims and complex tensors only (a real tensor is "
     "Hermitian when it is symmetric). Stored packed; a mirrored tile is the stored one's conjugate.",
     lua::l_hermitian},
    {"tp.declare", K::Function, "properties",
     "tp.declare(x, {symmetry = group or {groups...}, tiles = {t1, ...}, nonzero = mask [, trust = true]}) / "
     "x:declare{...}",
     "x with the properties declared (and those x is already known to have in other dims). The "
     "declaration is checked when the result is evaluated: the whole tensor on one rank, within 1e-5 of "
     "its largest magnitude for floats, exactly for integers (\"tp.declare: x is not symmetric in dims "
     "1,2 (max |x - x^T| = 3)\"); trust = true skips the check. Block sparsity: tiles gives the tile "
     "extents per dim, nonzero a bool tensor over the tile grid (ceil(shape / tiles) per dim; observed at "
     "the call) saying which tiles may hold nonzeros; the check: x is 0 in every other tile. The properties "
     "live in the graph: they "
     "stay through laziness, tp.env and planning, and ops that provably keep them carry them "
     "(x:properties()). Example: s = (a + a:t()):declare{symmetry = tp.symmetric{1,2}}.",
     lua::l_declare, M},
    {"tp.dense", K::Function, "properties", "tp.dense(x) / x:dense()",
     "The same values with nothing declared (x itself when nothing is known of it).", lua::l_dense, M},
    {"tp.nbytes", K::Function, "properties", "tp.nbytes(x) / x:nbytes()",
     "The bytes x's storage holds: a declared tensor is kept packed (docs/properties.md), a symmetric "
     "or antisymmetric group as its tiles with sorted tile indices (a symmetric 256^2 f32 tensor: 136 "
     "tiles of 16^2, 139,264 bytes, 0.53x dense), a block-sparse tensor as its nonzero tiles (edge tiles "
     "padded); a zero tensor holds none, a diagonal one n elements. With nothing declared, numel * the "
     "dtype's size. A named tensor reports what the environment holds (tp.tensors() shows the same).",
     lua::l_nbytes, M},
    {"tp.properties", K::Function, "properties", "tp.properties(x) / x:properties()",
     "What is known of x's structure: {symmetry = {groups...}, zero =, diagonal =, stored = the number "
     "of independent elements, and for a block-sparse x tiles = {...} and nonzero = the bool tile mask}. "
     "Known from x:declare, tp.zeros/ones/full/eye, and carried through "
     "scalar maps (x * 2 keeps symmetry; odd functions such as neg, sin, tanh keep antisymmetry, even "
     "ones such as abs, square, cos make it symmetric), transposes and permutes, sums and products of "
     "tensors with the same groups, and x + x^T (symmetric) and x - x^T (antisymmetric).",
     lua::l_properties, M},

    // --- map ------------------------------------------------------------------------
    UNARY("abs", Abs, "Absolute value."),
    UNARY("neg", Neg, "-x (not for bool: use tp.logical_not)."),
    UNARY("exp", Exp, "e^x. Integer inputs give f64, bool f32."),
    UNARY("log", Log, "Natural logarithm (log of a negative number is nan)."),
    UNARY("sqrt", Sqrt, "Square root."),
    UNARY("rsqrt", Rsqrt, "1 / sqrt(x)."),
    UNARY("sin", Sin, "Sine (radians)."),
    UNARY("cos", Cos, "Cosine (radians)."),
    UNARY("tanh", Tanh, "Hyperbolic tangent."),
    UNARY("sigmoid", Sigmoid, "1 / (1 + e^-x), computed without overflow."),
    UNARY("relu", Relu, "max(x, 0)."),
    UNARY("gelu", Gelu, "x * Phi(x) with the exact erf form."),
    UNARY("floor", Floor, "Round toward -inf (integers unchanged)."),
    UNARY("ceil", Ceil, "Round toward +inf (integers unchanged)."),
    UNARY("round", Round, "Round half to even, as numpy (integers unchanged)."),
    UNARY("sign", Sign, "-1, 0 or 1 (nan stays nan)."),
    UNARY("square", Square, "x * x."),
    UNARY("reciprocal", Reciprocal, "1 / x."),
    UNARY("logical_not", LogicalNot, "not x, as bool (nonzero is true)."),
    UNARY("real", Real, "The real part: f32 of c64, f64 of c128; a real x itself (numpy.real)."),
    UNARY("imag", Imag,
          "The imaginary part: f32 of c64, f64 of c128; zeros of a real x's dtype (numpy.imag)."),
    UNARY("conj", Conj, "The complex conjugate re - i im; a real x itself (numpy.conj)."),
    UNARY("angle", Angle,
          "The argument atan2(im, re) in radians, a real of x's precision (numpy.angle); of a real x, "
          "atan2(0, x): 0 or pi."),
    {"tp.complex", K::Function, "map", "tp.complex(re, im)",
     "re + i im, elementwise with broadcasting (torch.complex): f32 parts (and f16, bf16, bool, i8, u8) "
     "give c64, f64 parts (and i32, i64) c128. Lua numbers are real, so this is how a complex "
     "constant is written: tp.complex(0, 1) is i. Complex arithmetic follows numpy: + - * / ^ (Smith's "
     "quotient), neg, exp, log, sqrt, sin, cos, square, reciprocal, abs and angle (real results), ==, "
     "~= and sum, prod, mean, matmul; the ops that need an order (<, max, sort, ...) refuse complex "
     "operands (docs/dtypes.md).",
     l_binary<Op::Complex>},
    {"tp.result_type", K::Function, "map", "tp.result_type(a, b, ...)",
     "The dtype an elementwise op on these operands computes in, as a string: tensors promote by "
     "numpy's table, Lua numbers and booleans are weak (NEP 50): tp.result_type(tp.ones({2}, "
     "{dtype='i8'}), 2.5) is 'f64', with an f16 tensor 'f16' (docs/dtypes.md).",
     lua::l_result_type},
    BINARY("add", Add, " / a + b", "Elementwise sum, with broadcasting."),
    BINARY("sub", Sub, " / a - b", "Elementwise difference."),
    BINARY("mul", Mul, " / a * b", "Elementwise product (not matmul)."),
    BINARY("div", Div, " / a / b", "True division: integers give floats."),
    BINARY("floordiv", FloorDiv, " / a // b",
           "Floor division as numpy's divmod: for floats (a - fmod(a, b)) / b rounded to the nearest "
           "integer, which is floor(a / b) except where a / b rounds up (1 // 0.1 is 9, since 0.1 "
           "is slightly above 1/10); inf // b and a // 0 are nan or inf as numpy. Integers: exact "
           "floor, and division by zero gives 0."),
    BINARY("mod", Mod, " / a % b",
           "Modulus with the sign of b (Lua, numpy): for floats fmod(a, b), plus b when the signs "
           "differ, so a == (a // b) * b + a % b holds as numpy's divmod (1 % 0.1 is ~0.1); "
           "a % 0 is nan, inf % b is nan. Integers: exact, and a % 0 gives 0."),
    BINARY("pow", Pow, " / a ^ b", "a to the power b (integers stay integers)."),
    BINARY("maximum", Maximum, "", "Elementwise max; nan propagates."),
    BINARY("minimum", Minimum, "", "Elementwise min; nan propagates."),
    BINARY("atan2", Atan2, "", "The angle of the point (b, a), in radians."),
    BINARY("eq", Eq, "", "a == b elementwise, as a bool tensor (Lua's own == cannot do it: see :help ==)."),
    BINARY("ne", Ne, "", "a ~= b, as a bool tensor."),
    BINARY("lt", Lt, "", "a < b, as a bool tensor (Lua's < cannot return a tensor)."),
    BINARY("le", Le, "", "a <= b, as a bool tensor."),
    BINARY("gt", Gt, "", "a > b, as a bool tensor."),
    BINARY("ge", Ge, "", "a >= b, as a bool tensor."),
    BINARY("logical_and", LogicalAnd, "", "a and b, as bool (nonzero is true)."),
    BINARY("logical_or", LogicalOr, "", "a or b, as bool."),
    {"tp.where", K::Function, "map", "tp.where(cond, a, b) / tp.where(cond)",
     "a where cond is true, else b; all three broadcast together. With cond alone: the 1-based "
     "indices of cond's nonzero elements, one i64 tensor per dim of cond, returned as that many "
     "values in row-major order (numpy.nonzero, torch.where(cond)); see the indexing section for "
     "how the count is found.",
     lua::l_where},
    {"tp.cast", K::Function, "map", "tp.cast(x, dtype) / x:cast(dtype)",
     "Convert to dtype (bool, i8, u8, i32, i64, f16, bf16, f32, f64, c64, c128; docs/dtypes.md). Float to "
     "int truncates toward 0 and saturates at the integer's range (NaN gives 0); integer narrowing wraps; "
     "complex to real keeps the real part (numpy's cast, without its warning); to bool is x ~= 0.",
     lua::l_cast, M},
    {"tp.clamp", K::Function, "map", "tp.clamp(x, lo, hi) / x:clamp(lo, hi)",
     "Limit x to [lo, hi]; either bound may be nil.", lua::l_clamp, M},

    // --- reduce ---------------------------------------------------------------------
    {"tp.sum", K::Function, "reduce", "tp.sum(x [,dims] [,opts]) / x:sum([dims] [,opts])",
     "Sum over dims (a number, a sequence, or nil for all). opts.keepdim keeps reduced dims "
     "as size 1. Integers and bools sum to i64. Over an empty dim the sum is 0 (numpy's identity).",
     l_reduce<Op::Sum>, M},
    {"tp.prod", K::Function, "reduce", "x:prod([dims] [,opts])",
     "Product over dims (1 over an empty dim); opts.keepdim.", l_reduce<Op::Prod>, M},
    {"tp.max", K::Function, "reduce", "x:max([dims] [,opts])",
     "Maximum over dims (values only; see argmax); nan propagates. opts.keepdim. Over an empty dim "
     "it is an error, as numpy's (no identity).",
     l_reduce<Op::Max>, M},
    {"tp.min", K::Function, "reduce", "x:min([dims] [,opts])", "Minimum over dims. opts.keepdim.",
     l_reduce<Op::Min>, M},
    {"tp.all", K::Function, "reduce", "x:all([dims] [,opts])", "True where every element is nonzero.",
     l_reduce<Op::All>, M},
    {"tp.any", K::Function, "reduce", "x:any([dims] [,opts])", "True where some element is nonzero.",
     l_reduce<Op::Any>, M},
    {"tp.mean", K::Function, "reduce", "x:mean([dims] [,opts])",
     "Arithmetic mean over dims; integers give f64. opts.keepdim. Over an empty dim: nan (0/0, as "
     "numpy, without its warning).",
     lua::l_mean, M},
    {"tp.var", K::Function, "reduce", "x:var([dims] [,opts])",
     "Variance: sum((x - mean)^2) / max(n - correction, 0), as numpy (nan or inf where that is 0). "
     "opts.correction (default 0), opts.keepdim.",
     lua::l_var, M},
    {"tp.std", K::Function, "reduce", "x:std([dims] [,opts])",
     "Standard deviation, sqrt(var). opts.correction (default 0), opts.keepdim.", lua::l_std, M},
    {"tp.norm", K::Function, "reduce", "tp.norm(x [,p] [,dims] [,opts]) / x:norm([p] [,dims] [,opts])",
     "The entrywise p-norm over dims (nil: all), as torch's x.norm(p, dim): p defaults to 2, \"fro\" is 2, "
     "math.huge or \"inf\" the max norm; so x:norm(1, 2) is the 1-norm of each row. opts.keepdim.",
     lua::l_norm, M},
    {"tp.argmax", K::Function, "reduce", "x:argmax([dim] [,opts])",
     "1-based index (i64) of the first maximum along dim, or into the flattened tensor when "
     "dim is nil. opts.keepdim.",
     l_argreduce<Op::ArgMax>, M},
    {"tp.argmin", K::Function, "reduce", "x:argmin([dim] [,opts])",
     "1-based index of the first minimum, as argmax.", l_argreduce<Op::ArgMin>, M},

    // --- sorting and scans (whole lines along one dim; the other dims shard freely) ------
    {"tp.sort", K::Function, "sort", "tp.sort(x [,dim] [,opts]) / x:sort([dim] [,opts])",
     "Sorts along dim (default the last) and returns values, indices: indices (i64) are the 1-based "
     "positions in x (values[j] is x[indices[j]] along dim). Stable (equal elements keep their order); "
     "NaN sorts after every number. opts.descending (default false; stable too, NaN first). On P ranks, "
     "lines of 2^20 values or more (TAPESTRY_SAMPLE_SORT_MIN), fewer than P of them, are a sample sort "
     "across the ranks, and x is then computed when sort is called (its bucket sizes are data). "
     "Example: local v, i = x:sort(1)",
     lua::l_sort, M},
    {"tp.argsort", K::Function, "sort", "tp.argsort(x [,dim] [,opts]) / x:argsort([dim] [,opts])",
     "The 1-based indices (i64) tp.sort returns: a stable sort along dim (default the last). "
     "opts.descending.",
     lua::l_argsort, M},
    {"tp.topk", K::Function, "sort", "tp.topk(x, k [,dim] [,opts]) / x:topk(k [,dim] [,opts])",
     "The k largest along dim (default the last), largest first, and their 1-based indices: values, "
     "indices. k in 0..size of dim (0: empty). opts.largest = false gives the k smallest, smallest first. "
     "Ties keep x's order. Lines long enough for a sample sort (tp.sort) take each rank's k best, "
     "then the best k of those.",
     lua::l_topk, M},
    {"tp.unique", K::Function, "sort", "tp.unique(x [,opts]) / x:unique([opts])",
     "The distinct values of x, flattened and sorted (1-D, x's dtype); NaNs count as one value. "
     "opts.return_counts = true also returns how often each occurs (i64). Its size depends on the "
     "data, so it computes x when called (an observation point, as x:totable()); on several ranks, "
     "for lines a sort would sort across them, each rank's chunk is deduplicated where it lies and "
     "the chunks' distinct values are merged across the ranks. The results are lazy tensors.",
     lua::l_unique, M},
    {"tp.searchsorted", K::Function, "sort",
     "tp.searchsorted(sorted_sequence, values [,opts]) / s:searchsorted(values [,opts])",
     "1-based insertion points (i64, values' shape): the position p where each value would be inserted "
     "into the ascending 1-D sorted_sequence to keep it sorted (numpy's index + 1, so 1..n+1). Equal "
     "elements: before them, or after them with opts.right = true (or opts.side = 'right'). Compared in "
     "the common dtype; NaN sorts last.",
     lua::l_searchsorted, M},
    {"tp.cumsum", K::Function, "sort", "tp.cumsum(x [,dim]) / x:cumsum([dim])",
     "Running sum along dim: y[i] = x[1] + ... + x[i]. dim may be left out for a 1-D x only. Integers "
     "and bools sum in i64, as numpy. Gradient: the reverse running sum.",
     lua::l_scan<Op::Cumsum>, M},
    {"tp.cumprod", K::Function, "sort", "tp.cumprod(x [,dim]) / x:cumprod([dim])",
     "Running product along dim; integers and bools in i64. Its gradient divides by x, so it is "
     "exact only where x has no zeros.",
     lua::l_scan<Op::Cumprod>, M},
    {"tp.cummax", K::Function, "sort", "tp.cummax(x [,dim]) / x:cummax([dim])",
     "Running maximum along dim: values, indices (1-based i64 position of the maximum so far; a tie "
     "moves to the later element, as torch). NaN propagates.",
     lua::l_scan<Op::Cummax>, M},
    {"tp.cummin", K::Function, "sort", "tp.cummin(x [,dim]) / x:cummin([dim])",
     "Running minimum along dim: values, indices, as cummax.", lua::l_scan<Op::Cummin>, M},
    {"tp.logcumsumexp", K::Function, "sort", "tp.logcumsumexp(x [,dim]) / x:logcumsumexp([dim])",
     "log(cumsum(exp(x))) along dim without overflow (accumulated in f64); integers give floats.",
     lua::l_scan<Op::Logcumsumexp>, M},
    {"tp.matmul", K::Function, "contract", "tp.matmul(a, b) / a:matmul(b)",
     "Matrix product with numpy's rules: 1-D operands are vectors, leading dims are batch dims "
     "and broadcast. f32/f64 run on OpenBLAS. A 2-D a declared block-sparse (x:declare{tiles, nonzero}) "
     "is multiplied by its nonzero tiles only (so planned and run with their flops alone), and the "
     "result is declared sparse in the row blocks with none. An empty inner dim (k = 0) gives "
     "zeros, as numpy.",
     lua::l_matmul, M},
    {"tp.einsum", K::Function, "contract", "tp.einsum(spec, a, b, ...)",
     "Einstein summation over any number of operands, as numpy.einsum: spec names each "
     "operand's dims with letters, 'ik,kj->ij'; without '->' the output is the letters seen "
     "once, sorted. A letter repeated in one operand takes the diagonal ('ii->i'); sizes of 1 "
     "broadcast. The pairwise order is chosen by cost as opt_einsum does (exhaustive for up to "
     "6 operands, greedy beyond) and lowered to matmul, sum and permute; dtypes promote as "
     "matmul. Example: tp.einsum('ij,jk,kl->il', a, b, c)",
     lua::l_einsum},
    {"tp.einsum_path", K::Function, "contract", "tp.einsum_path(spec, a, b, ...)",
     "The contraction order tp.einsum would follow, without computing: returns order, "
     "naive_flops, flops. order is a sequence of pairs {i, j} in opt_einsum's convention (the "
     "tensors at positions i and j of the current list are contracted and the result appended "
     "at the end), each with .spec such as 'jk,kl->jl'; flops count a multiply-add as 2.",
     lua::l_einsum_path},
    {"tp.tensordot", K::Function, "contract", "tp.tensordot(a, b [,dims])",
     "Sums products over pairs of dims, as numpy.tensordot: dims = n (default 2) pairs the "
     "last n dims of a with the first n of b; dims = {{a dims}, {b dims}} (1-based) pairs "
     "them explicitly. The result has a's remaining dims, then b's.",
     lua::l_tensordot},
    {"tp.outer", K::Function, "contract", "tp.outer(a, b) / a:outer(b)",
     "Outer product, as numpy.outer: a and b are flattened, result {numel(a), numel(b)}.", lua::l_outer, M},

    // --- shape ----------------------------------------------------------------------
    {"tp.reshape", K::Function, "shape", "x:reshape(shape)",
     "Same elements in row-major order with another shape; one size may be -1.", lua::l_reshape, M},
    {"tp.permute", K::Function, "shape", "x:permute{d1, d2, ...}",
     "Reorder dims: output dim i is input dim d_i.", lua::l_permute, M},
    {"tp.transpose", K::Function, "shape", "x:transpose(d1, d2)", "Swap two dims.", lua::l_transpose, M},
    {"tp.t", K::Function, "shape", "x:t()", "Transpose of a 2-D tensor (1-D: unchanged).", lua::l_t, M},
    {"tp.expand", K::Function, "shape", "x:expand(shape)",
     "Broadcast size-1 dims (and add leading dims) without copying; -1 keeps a size.", lua::l_expand, M},
    {"tp.squeeze", K::Function, "shape", "x:squeeze([d])",
     "Remove dim d, which must have size 1, or every size-1 dim.", lua::l_squeeze, M},
    {"tp.unsqueeze", K::Function, "shape", "x:unsqueeze(d)",
     "Insert a size-1 dim at position d (1..dim+1; -1 appends).", lua::l_unsqueeze, M},
    {"tp.flatten", K::Function, "shape", "x:flatten([first [,last]])",
     "Merge dims first..last (default all) into one.", lua::l_flatten, M},
    {"tp.cat", K::Function, "shape", "tp.cat({a, b, ...} [,d])",
     "Concatenate along dim d (default 1); other dims must match; dtypes promote.", lua::l_cat},
    {"tp.stack", K::Function, "shape", "tp.stack({a, b, ...} [,d])",
     "Stack equal-shaped tensors along a new dim d (default 1).", lua::l_stack},
    {"tp.pad", K::Function, "shape", "x:pad(pads [,opts])",
     "Pad every dim: pads is {{before, after}, ...} with one pair per dim in order (not torch's "
     "last-dim-first), or the flat {b1, a1, b2, a2, ...}. opts.mode: 'constant' (default; "
     "opts.value, default 0, cast to x's dtype), 'reflect' (mirror without repeating the edge, "
     "as numpy; pads < size) or 'periodic' (wrap around; pads <= size). Built from slices and "
     "cat, so a sharded pad moves only the rows each block needs.",
     lua::l_pad, M},
    {"tp.roll", K::Function, "shape", "x:roll(shift, d)",
     "numpy.roll: element i moves to (i + shift) mod n along dim d; without d, over the "
     "flattened tensor (shape kept). Two slices and a cat.",
     lua::l_roll, M},
    {"tp.flip", K::Function, "shape", "x:flip([dims])",
     "Reverse the order of elements along dims (a number or a table; default all dims), as "
     "torch.flip / numpy.flip. A slice with step -1, so it shards like one.",
     lua::l_flip, M},
    {"tp.diag", K::Function, "structure", "x:diag([k])",
     "numpy.diag: of a 1-D x of n elements, the (n+|k|)-square matrix with x on diagonal k (0 "
     "the main one, k > 0 above, k < 0 below) and zeros elsewhere; of a 2-D x, its diagonal k "
     "(as x:diagonal(k)).",
     lua::l_diag, M},
    {"tp.diagonal", K::Function, "structure", "x:diagonal([offset [,dim1 [,dim2]]])",
     "numpy.diagonal / torch.diagonal: the elements x[..i..j..] with j - i = offset (default 0) "
     "over dims dim1 and dim2 (default 1 and 2); those dims are removed and the diagonal is "
     "appended as the last dim. An offset past the matrix is an error (no empty tensors).",
     lua::l_diagonal, M},
    {"tp.tril", K::Function, "structure", "x:tril([k])",
     "Lower triangle over the last two dims: keeps x[..., i, j] where j - i <= k (default 0), "
     "zeros elsewhere (numpy.tril, batched). A masked map over an index comparison.",
     lua::l_tril, M},
    {"tp.triu", K::Function, "structure", "x:triu([k])",
     "Upper triangle over the last two dims: keeps x[..., i, j] where j - i >= k (default 0), "
     "zeros elsewhere (numpy.triu, batched).",
     lua::l_triu, M},
    {"Tensor:trace", K::Method, "structure", "x:trace() / tp.trace(x)",
     "Sum of a matrix's main diagonal (numpy.trace of a 2-D x; ints sum to i64). tp.trace with "
     "a Tensor is this; with a path or nil it is the Perfetto trace.",
     lua::l_matrix_trace},
    {"tp.narrow", K::Function, "slice", "x:narrow(d, first, len)",
     "len elements of dim d starting at index first (1-based).", lua::l_narrow, M},
    {"tp.select", K::Function, "slice", "x:select(d, i)",
     "Index i of dim d, dropping that dim (x[i] is x:select(1, i)).", lua::l_select, M},
    {"Tensor.__index", K::Metamethod, "slice", "x[{ {a,b}, {}, i, {a,b,step} }]",
     "Read a region: per dim {} is the whole dim, {a} a to the end, {a,b} the inclusive range, "
     "{a,b,step} every step-th (a negative step goes down from a to b: {-1,1,-1} reverses), a "
     "number selects one index and drops the dim. Negative indices count from the end. Missing "
     "trailing entries mean {}.",
     lua::l_index},

    {"Tensor.__newindex", K::Metamethod, "slice", "tp.env.w[{ {a,b}, {} }] = y",
     "Write a region of a named tensor: w is rebound to a copy with the region replaced by y "
     "(a number or a tensor broadcast to the region, cast to w's dtype); the rest is kept. "
     "Ranges need step 1.",
     lua::l_newindex},

    // --- indexing -------------------------------------------------------------------
    {"tp.gather", K::Function, "index", "tp.gather(x, dim, index) / x:gather(dim, index)",
     "torch.gather with 1-based index values: out[i][j] = x[index[i][j]][j] for dim 1, "
     "x[i][index[i][j]] for dim 2, and so on. index is an integer tensor (or a Lua table, made "
     "i64) of x's rank, no larger than x in the other dims; out has index's shape and x's dtype. "
     "A negative value counts from the end; one out of range is an error naming it when "
     "computed. Sharded, each block reads x whole along dim. Gradient: scatter_add.",
     lua::l_gather, M},
    {"tp.scatter", K::Function, "index", "tp.scatter(x, dim, index, src) / x:scatter(dim, index, src)",
     "torch.scatter with 1-based index values: a copy of x with out[index[i][j]][j] = src[i][j] "
     "for dim 1 (and so on). src is a tensor at least index's shape (its corner is used, cast to "
     "x's dtype) or a number; index as tp.gather's. Of repeated indices the last in row-major "
     "order wins. Sharded, dim is never split. Gradients: x gets g zeroed where written, src "
     "gets g gathered.",
     lua::l_scatter<Op::Scatter>, M},
    {"tp.scatter_add", K::Function, "index",
     "tp.scatter_add(x, dim, index, src) / x:scatter_add(dim, index, src)",
     "torch.scatter_add: as tp.scatter, but src's elements are added, repeated indices "
     "accumulating (x numeric). Gradients: g to x, g gathered to src.",
     lua::l_scatter<Op::ScatterAdd>, M},
    {"tp.index_select", K::Function, "index", "tp.index_select(x, dim, index) / x:index_select(dim, index)",
     "torch.index_select with 1-based values: the slices of x at the 1-D index along dim, in "
     "index's order (repeats allowed). A gather of the broadcast index; gradient index_add.",
     lua::l_index_select, M},
    {"tp.take", K::Function, "index", "tp.take(x, index) / x:take(index)",
     "torch.take: the elements of x at 1-based flat (row-major) positions, in index's shape. "
     "Gradient: added back at those positions.",
     lua::l_take, M},
    {"Tensor.__index_tensor", K::Metamethod, "index", "x[idx]  x[{ {}, idx }]  x[mask]",
     "An integer tensor idx in a subscript picks 1-based indices along its dim, which is "
     "replaced by idx's dims (numpy's integer-array index; one index tensor per subscript, the "
     "other entries {}). A bool mask of x's leading dims selects, in row-major order, the "
     "elements (or sub-tensors) where it is true: {count, x's other dims}. The count decides the "
     "shape, so it is observed first: the mask is computed and kept where it lies, its count "
     "read, then the selection runs on the kept mask (a mask with no true element is an error: "
     "there are no empty tensors yet). Bound as Tensor.__index.",
     nullptr},
    {"Tensor.__newindex_tensor", K::Metamethod, "index", "tp.env.w[mask] = v  tp.env.w[{ {}, idx }] = v",
     "Writes through a tensor key. A mask with a number v: w where mask, else w (a map, no "
     "count needed); with a tensor v: v broadcast to w[mask]'s shape is placed at the true "
     "elements in order (numpy; the count is observed as for x[mask]). An integer index "
     "tensor: the slices it names along its dim are replaced by v broadcast to them (the last "
     "repeat wins). Bound as Tensor.__newindex.",
     nullptr},

    // --- windows --------------------------------------------------------------------
    {"tp.stencil", K::Function, "window", "tp.stencil(x, k [,opts])",
     "n-D correlation of x with kernel k (x's rank, odd sizes, centred; a tensor or nested "
     "table): out[i] = sum_r x[i + r - c] * k[r] with c the centre. The output has x's shape. "
     "opts.boundary: 'zero' (default), 'periodic' or 'reflect' (as x:pad). A split along a dim "
     "moves size-1 halo elements of that dim per cut. Weights that are exactly 0 are skipped, as in "
     "scipy.ndimage (an inf under a zero weight does not make NaN). An f32 x sums in f32 (fused "
     "multiply-adds), as numpy and torch do. "
     "Example: tp.stencil(u, {{0,1,0},{1,-4,1},{0,1,0}}).",
     lua::l_stencil},
    {"tp.conv2d", K::Function, "window", "tp.conv2d(x, w [,opts])",
     "2-D convolution (cross-correlation, as torch) of x {N,C,H,W} with w {O,C/groups,KH,KW}: "
     "{N,O,OH,OW}, OH = (H + 2*ph - dh*(KH-1) - 1) // sh + 1. opts: stride, padding (zeros, "
     "less than the dilated kernel), dilation (each a number or {h, w}), groups. No bias: add "
     "it. f32/f64 run im2col + OpenBLAS.",
     lua::l_conv2d},
    {"tp.maxpool2d", K::Function, "window", "tp.maxpool2d(x, k [,opts])",
     "Maximum over k x k (or {kh, kw}) windows of x {N,C,H,W}. opts: stride (default k), "
     "padding (at most k/2; padding never wins). NaN propagates.",
     lua::l_pool2d<Op::MaxPool2d>},
    {"tp.avgpool2d", K::Function, "window", "tp.avgpool2d(x, k [,opts])",
     "Mean over k x k (or {kh, kw}) windows of x {N,C,H,W}, options as maxpool2d. Always "
     "divides by kh*kw, padding included (torch's count_include_pad=true). Integers give f64.",
     lua::l_pool2d<Op::AvgPool2d>},

    // --- observe --------------------------------------------------------------------
    {"Tensor:dim", K::Method, "tensor", "x:dim()", "Number of dimensions.", lua::l_dim},
    {"Tensor:size", K::Method, "tensor", "x:size([d])",
     "Size of dim d, or the whole shape as a table. Also x.shape, #x (size of dim 1).", lua::l_size},
    {"Tensor:numel", K::Method, "tensor", "x:numel()", "Number of elements.", lua::l_numel},
    {"Tensor:item", K::Method, "observe", "x:item()",
     "Observe a one-element tensor as a Lua number (integer for int dtypes) or boolean.", lua::l_item},
    {"Tensor:totable", K::Method, "observe", "x:totable()",
     "Observe as nested Lua tables (a scalar gives a number).", lua::l_totable},
    {"Tensor:release", K::Method, "tensor", "x:release()",
     "Drop this handle's reference now (also done by __gc and __close); later use is an error.",
     lua::l_release},
    {"tp.eval", K::Function, "observe", "tp.eval(a, b, ...)",
     "Compute the given tensors (and pending tp.env bindings) now; returns them, backed by data. "
     "A computed value is kept while a Tensor refers to it or a pending expression will read it, "
     "so `u = tp.eval(step(u))` in a loop holds one state, not every step's.",
     lua::l_eval},
    {"tp.stats", K::Function, "observe", "tp.stats()",
     "Counters: observations, nodes_evaluated, kernels, fused_ops, bytes_allocated, bytes_live (tensor data "
     "alive now, on this process; a refused allocation is never counted), live_nodes, "
     "plans, plan_cache_hits, blocks_run, messages, bytes_moved (between ranks: bytes_transfers, the "
     "slices plans moved, plus bytes_combines, what merging partials moved, which together equal the "
     "plans' plan:cost().bytes_moved, plus bytes_gathered, results gathered to rank 0), collectives "
     "(the plans' moves by kind: {[\"all-reduce\"] = {count =, bytes =}, ...} for point-to-point, "
     "broadcast, all-gather, all-to-all, reduce, all-reduce and reduce-scatter), device_blocks, "
     "bytes_to_device, bytes_from_device (sharded blocks run on a GPU and the host-device copies they "
     "needed; "
     "rank 0's own under MPI), bytes_read, bytes_written (tensor data read from and written to files "
     "by this process: every virtual rank's, rank 0's own under MPI), and "
     "time_schedule, time_run, time_plan, time_move (seconds; time_move is the part of time_run "
     "spent sending, receiving and combining between ranks), block_retries (blocks run again after a "
     "transient failure), and for a driver's MPI job job_relaunches (jobs lost and replaced), "
     "restored_from_survivors, restored_from_replicas (stored tensors restored from the surviving ranks' "
     "own pieces, or with a buddy's replica of a lost rank's), restored_from_lineage, "
     "restored_from_checkpoint (no copy survived: recomputed from the expression it was computed "
     "from, or read from the last tp.checkpoint) and tensors_lost (none of these brought it back), "
     "spills, bytes_spilled, spill_readbacks (values and stored pieces written to --spill-dir because "
     "an allocation would pass --memory-per-rank, their bytes, and how many were read back: this "
     "process's and every virtual rank's; under MPI every rank's, each of which spills its own pieces, as "
     "their answers to the last request said).",
     lua::l_stats},
    {"tp.set_printoptions", K::Function, "observe",
     "tp.set_printoptions{threshold=, edgeitems=, precision=, linewidth=}",
     "How tensors print, as numpy's np.set_printoptions (defaults 1000, 3, 8, 75): a tensor of more than "
     "threshold elements shows only edgeitems at each end of every dim longer than 2*edgeitems, floats "
     "keep at most precision digits after the point, lines wrap at linewidth. On several ranks only the "
     "elements shown are gathered to rank 0 (tp.stats().bytes_moved counts them). Keys left out keep their "
     "value.",
     lua::l_set_printoptions},
    {"tp.get_printoptions", K::Function, "observe", "tp.get_printoptions()",
     "The print options as a table {threshold, edgeitems, precision, linewidth}.", lua::l_get_printoptions},
    {"tp.trace", K::Function, "observe", "tp.trace(path) / tp.trace(nil) / tp.trace(x)",
     "Start writing a Chrome/Perfetto trace (JSON trace events; open it in ui.perfetto.dev or "
     "chrome://tracing) of every block, transfer and combine on every rank (pid = rank), of "
     "single-rank kernels, and of the plan/run phases; a transfer or combine is named by the collective "
     "it is part of (\"broadcast: send to 3\", \"all-reduce sum (matmul)\"). tp.trace(nil) stops and "
     "finishes the file "
     "and returns its path; the file is also finished at exit. tp.trace(x) of a Tensor is the "
     "matrix trace (x:trace()).",
     lua::l_trace},
    {"tp.clock", K::Function, "observe", "tp.clock()", "Monotonic wall-clock seconds, as a float.",
     lua::l_clock},
    {"tp.tensors", K::Function, "env", "tp.tensors()",
     "The environment as rows {name, shape, dtype, bytes, layout, storage, computed, lost, replicated, "
     "packed}; storage: \"memory\", or \"disk\" for a tensor placed there with tp.place (its layout is "
     "then \"on disk\"); lost: its shards were on an MPI job that lost a rank and no copy survived "
     "(layout \"lost with the MPI job\"); replicated: each rank's pieces have a copy on another rank, "
     "so the loss of any one rank loses none of it (a driver's MPI job); packed: a declared tensor "
     "kept as its stored tiles (docs/properties.md): shape is the dense one, bytes and layout those "
     "of what is held.",
     lua::l_tensors},
    {"tp.place", K::Function, "env", "tp.place(x, {storage = \"disk\"})",
     "Put x's value on disk and return it as a tensor read from there when needed: computed (or "
     "read where it is stored), written under the spill directory (--spill-dir, default /tmp) as "
     "tp.save writes (on N ranks each rank its own rows), and read as tp.load reads (each rank only "
     "the boxes its blocks need, at each observation; nothing of it stays in memory between "
     "observations). tp.env.w = tp.place(tp.env.w, {storage = \"disk\"}) moves a named tensor to disk; "
     "tp.tensors() and :tensors say where each lives; a creator's storage = \"disk\" makes a tensor "
     "there (tp.zeros({n, n}, {name = \"w\", storage = \"disk\"})). The file is removed once nothing refers "
     "to "
     "the tensor. A write that fails (a full disk) is an error naming the tensor, and it stays "
     "where it was.",
     lua::l_place},
    {"tp.env", K::Module, "env", "tp.env.name = expr / tp.env.name / tp.env.name = nil",
     "Named tensors that outlive Lua variables. A binding is computed at the next observation; "
     "if that fails the previous value is kept. A computed value is stored as a leaf: its history "
     "is cut (tp.grad sees a parameter), and 1000 unobserved rebinds of a name in a row are "
     "computed at the binding. Names are identifiers (no NUL bytes); the metatable is protected. "
     "pairs(tp.env) iterates names in order.",
     nullptr},

    // --- io -------------------------------------------------------------------------
    {"tp.load", K::Function, "io", "tp.load(path [,opts])",
     "Read a NumPy .npy file (f32 '<f4', f64 '<f8', i32 '<i4', i64 '<i8', bool '|b1'; "
     "little-endian, C or Fortran order; a 0-d array gives a scalar). path may be an http:// or "
     "https:// URL (fetched by range requests). Lazy: the header is read now, "
     "the data when observed, and only the boxes the observation needs (x[{1, {1, 10}}] reads 10 "
     "elements), each rank its own; a file changed since the load is an error. opts: name (bind "
     "it in tp.env: read in parallel and stored at the next observation), dtype (cast after "
     "loading). Example: tp.load('w.npy', {name = 'w'})",
     lua::l_load},
    {"tp.save", K::Function, "io", "tp.save(x, path)",
     "Observe x and write it as a NumPy .npy file (version 1.0, C order) that np.load reads. "
     "On N ranks each rank writes the rows it holds. The file is written beside path and renamed, so path "
     "never holds half an array. Only a "
     "regular file is replaced: a link, device, FIFO or folder at path is an error.",
     lua::l_save},
    {"tp.save_env", K::Function, "io", "tp.save_env(dir)",
     "Checkpoint every named tensor: computes pending bindings, writes each as NAME.npy in a "
     "fresh folder dir/v-XXXX, then commits by renaming dir/manifest.json over the old one "
     "(creating dir). A failure at any point leaves the previous checkpoint whole and no new "
     "folder; after the commit the previous checkpoint's files are removed. A declared tensor is "
     "written dense, its declaration in the manifest. Returns the names written.",
     lua::l_save_env},
    {"tp.load_env", K::Function, "io", "tp.load_env(dir)",
     "Restore a checkpoint written by tp.save_env: binds every tensor its manifest lists "
     "(other names are kept; declared ones declared again, trusted, and kept packed) and returns their "
     "names. All or nothing: if a file is missing "
     "or disagrees with the manifest, the environment is unchanged and the error names it.",
     lua::l_load_env},
    {"tp.checkpoint", K::Function, "io", "tp.checkpoint([dir])",
     "Write the automatic checkpoint now: every named tensor, as tp.save_env does, into dir or "
     "else the directory given with --checkpoint-dir (an error when neither is given). The "
     "session remembers which file holds which tensor: after a lost MPI job, a named tensor no "
     "copy of survived is read back from the last checkpoint when it still holds that version "
     "and recomputing it from its lineage is not cheaper (docs/reliability.md). "
     "--checkpoint-every MIN writes one every MIN minutes (at the first observation past the "
     "interval). Returns the names written.",
     lua::l_checkpoint},
    {"tp.load_csv", K::Function, "io", "tp.load_csv(path [,opts])",
     "Read a CSV or TSV file as a 2-D tensor {rows, columns}; returns the tensor and the column "
     "names (a sequence: the header's, or '1', '2', ... without one). Quoted fields as RFC 4180; an "
     "empty field is NaN. opts: header (true/false; default: the first row is a header when one of "
     "its fields is not a number), delimiter (one character; default a tab for .tsv, else a comma), "
     "dtype (default f32), columns (a sequence of names or 1-based numbers: the columns to keep, in "
     "that order; the others may hold text), name (bind it in tp.env). path may be an http(s):// "
     "URL. Lazy: the call reads the text once to find its rows (checking every row's field count "
     "and the first row's values); each rank parses only the rows an observation reads, and a bad "
     "field further down is an error then, naming its line and column. "
     "Example: local x, names = tp.load_csv('iris.csv', {columns = {1, 2, 3, 4}})",
     lua::l_load_csv},
    {"tp.save_csv", K::Function, "io", "tp.save_csv(x, path [,opts])",
     "Observe a 1-D (one column) or 2-D tensor x and write it as CSV (TSV for .tsv): one row per "
     "line, numbers in the shortest form that reads back the same, bools as 1 and 0. On N ranks each "
     "rank formats the rows it holds and writes them at its offset in the file. Written beside "
     "path and renamed, so a failed save leaves the previous file intact. opts: columns (a sequence "
     "of names: the header row), delimiter.",
     lua::l_save_csv},
    {"tp.load_hdf5", K::Function, "io", "tp.load_hdf5(path, dataset [,opts])",
     "Read an HDF5 dataset (chunked or contiguous, compressed or not; integers load as i32 or i64, "
     "floats as f32 or f64, h5py bools as bool). Returns the tensor and a table of the dataset's "
     "attributes (numbers, strings, sequences of numbers). Lazy, as tp.load: only the boxes an "
     "observation needs are read, each by the rank that needs it (tp.stats().bytes_read counts "
     "them). opts: dtype (cast after loading), name (bind it in "
     "tp.env). Example: local u, attrs = tp.load_hdf5('sim.h5', '/fields/u')",
     lua::l_load_hdf5},
    {"tp.save_hdf5", K::Function, "io", "tp.save_hdf5(x, path, dataset [,opts])",
     "Observe x and write a new HDF5 file holding it as `dataset` (groups in the name are created) "
     "that h5py reads. Contiguous by default; opts.chunks (one size per dimension) makes it chunked "
     "(uncompressed). Either way every rank writes the rows it holds, in parallel. Written beside "
     "path and renamed, so "
     "a failed save leaves the previous file intact. opts: attrs (name -> number, string or "
     "sequence of numbers), chunks.",
     lua::l_save_hdf5},
    {"tp.load_zarr", K::Function, "io", "tp.load_zarr(path [,opts])",
     "Read a zarr v2 array (a folder with .zarray, or its http(s):// URL; C or F order; no compressor, zlib, "
     "gzip, zstd or "
     "blosc; dtypes <f4 <f8 <i4 <i8 |b1; missing chunks hold fill_value). Returns the tensor and a "
     "table of its .zattrs (numbers, strings, sequences of numbers). Lazy, as tp.load: each rank "
     "reads and decodes only the chunks its boxes touch, whatever the chunk grid. opts: dtype (cast after "
     "loading), name (bind it in tp.env). Example: local x, attrs = tp.load_zarr('data.zarr')",
     lua::l_load_zarr},
    {"tp.save_zarr", K::Function, "io", "tp.save_zarr(x, path [,opts])",
     "Observe x and write it as a zarr v2 array (C order) that the zarr package reads, written "
     "beside path and swapped in whole (only a missing path or an existing zarr array is replaced). "
     "On N ranks each chunk is encoded and written by a rank holding it (a chunk no rank holds whole "
     "is gathered to rank 0). "
     "opts: chunks (one size per dimension; default about 1 MiB, nested in the ranks' blocks), "
     "compressor ('zstd' "
     "default, 'zlib', 'gzip', 'blosc' (lz4 inside, byte shuffle), 'none'), level, attrs (name -> "
     "number, string or sequence of numbers).",
     lua::l_save_zarr},
    {"tp.load_sql", K::Function, "io", "tp.load_sql(db, query [,opts])",
     "Run one reading SQL statement on the SQLite database file db (or the PostgreSQL database of a "
     "postgresql:// URL, inside a READ ONLY transaction); returns a 2-D tensor {rows, "
     "numeric columns}, the names of those columns (a sequence, as the query names them) and the "
     "names of the columns left out because they hold text or blobs. A column is numeric when every "
     "value is an INTEGER, a REAL or NULL (NaN). The query runs at the call, on rank 0 (its result "
     "is that moment's; see docs/io.md). opts: dtype (default f32; NULL is an error for "
     "i32, i64 and bool), name (bind it in tp.env). "
     "Example: local x, names = tp.load_sql('runs.db', 'SELECT step, loss FROM log')",
     lua::l_load_sql},
    {"tp.save_sql", K::Function, "io", "tp.save_sql(x, db, table [,opts])",
     "Observe a 1-D (one column) or 2-D tensor x and write it as the table `table` of the SQLite "
     "database file db (created if missing; or of a postgresql:// URL's database): REAL columns for floats "
     "(NaN as NULL), INTEGER for "
     "integers and bools. One transaction on one connection, rank 0's (the tensor is gathered to it): "
     "the table is replaced (or appended to) whole or not at all. opts: columns (a sequence of names; "
     "default c1, c2, ...), append (true: insert into the "
     "existing table, creating it if missing).",
     lua::l_save_sql},
    {"tp.load_safetensors", K::Function, "io", "tp.load_safetensors(path [,opts])",
     "Read a safetensors file or http(s):// URL (F32, F64, I32, I64, BOOL tensors; see docs/io.md). "
     "Returns a table "
     "of tensors keyed by their names in the file, and a table of the file's __metadata__ strings. "
     "Lazy, as tp.load: only the boxes an observation needs are read. opts: dtype (cast after "
     "loading), env (true: also bind each as tp.env.NAME, with every character that is not a "
     "letter, digit or _ made _, e.g. 'layer.0.weight' -> layer_0_weight). "
     "Example: local w, meta = tp.load_safetensors('model.safetensors', {env = true})",
     lua::l_load_safetensors},
    {"tp.save_safetensors", K::Function, "io", "tp.save_safetensors(tbl, path [,opts])",
     "Write a table of tensors (name -> Tensor; tp.env itself works) as a safetensors file that "
     "the safetensors library reads, tensors in name order. On N ranks each rank writes its own "
     "rows. The file is written beside path and renamed, so a failed save leaves the previous "
     "file intact. opts: metadata (a table of strings, the file's __metadata__).",
     lua::l_save_safetensors},

    // --- plans and layouts ------------------------------------------------------------
    {"tp.plan", K::Function, "plan", "tp.plan(a, b, ... [,opts])",
     "Plan without running and return a Plan: print(plan) shows one line per op (its placement, and on "
     "a mesh of named axes which index dim is split along each axis, replicated or left partial: "
     "[nodes: i, gpus: k partial sum]), then one line per kind of collective its output makes "
     "(broadcast, all-gather, all-to-all, reduce, all-reduce, reduce-scatter, point-to-point) with its "
     "bytes and alpha-beta time, and the totals, on any mesh; plan:collectives() returns those moves as "
     "{kind, op, node, ranks, bytes, time} tables; "
     "plan:blocks() lists every rank's blocks, transfers and combines; plan:cost() returns {time, "
     "bytes_moved, flops, peak_bytes, memory_penalty, estimated}, and plan:cost{exact = true} the exact "
     "simulation of every rank's program even where the plan was estimated (it lowers every block); "
     "plan:dot(path) writes Graphviz. A big "
     "graph on a "
     "big mesh (ops x ranks > 4096) is chosen and costed by estimate from sampled blocks "
     "(estimated=true) and its blocks are built only when it runs or is drawn. opts.mesh = N (or {ranks=, "
     "ranks_per_node=, "
     "flops=, memory=, bandwidth=, latency=, network_bandwidth=, network_latency=}) plans for "
     "another machine; opts.search = 'global' (the default: the optimum of per-op and per-edge "
     "costs by dynamic programming, refined by joint moves; 'anneal' is its old name), 'greedy' or "
     "{method=, steps=, budget=, seed=, exact_limit=, reassociate=}: steps joint choices costed at most "
     "(2000), budget blocks and transfers lowered at most over all the plans costed (4,000,000), "
     "exact_limit the ops x ranks past which candidates are compared by estimate (4096; 0: always, to "
     "check the estimate against plan:cost{exact = true}), reassociate = false to compute matmul chains "
     "as parenthesized (by default a chain (a@b)@c is computed in the order the cost model picks, jointly "
     "with the sharding, and print(plan) says which): budgets count work, never seconds, and nothing is "
     "random, so the same graph, mesh and options give the same plan in any process and under any "
     "load, and the plan cache keys on them.",
     lua::l_plan},
    {"tp.explain", K::Function, "plan", "tp.explain(x [,opts])",
     "Print (and return) why the plan was chosen: each op's signature, the candidate shardings "
     "tried and the best plan cost with each. Options as tp.plan.",
     lua::l_explain},
    {"tp.dot", K::Function, "plan", "tp.dot(x, path)",
     "Write the abstract expression graph of x as Graphviz.", lua::l_dot},
    {"tp.mesh", K::Function, "plan",
     "tp.mesh() / tp.mesh{nodes=, gpus=, ... [,order=] [,links=] [,flops=] [,memory=]}",
     "With a table: a modelled mesh of named axes for tp.plan(y, {mesh = tp.mesh{nodes = 16, gpus = 8}}), as "
     "JAX's Mesh: rank r has row-major coordinates over the axes, outermost first (the order given, else "
     "racks, nodes, hosts, sockets, ranks, gpus, devices, then other names alphabetically), and two ranks "
     "talk over the link of the outermost axis where they differ. Default links: 25 GB/s and 2 us along "
     "racks/nodes/hosts, 300 GB/s and 1 us along gpus/devices, 5 GB/s and 0.5 us otherwise; links = "
     "{gpus = {bandwidth=, latency=}} sets them. Without arguments: "
     "the allocation: {ranks, devices_per_rank, device, gpu, transport, device_transport, memory_per_rank "
     "(the memory budget: --memory-per-rank, by default the available memory less a margin), "
     "flops_per_rank, memory_bytes_per_s, link_bandwidth, link_latency, rates, link_rates, measured_at, "
     "machine, cpu_isa, "
     "description}. The rates are what the planner costs the running mesh with: rates is \"measured\" (this "
     "machine's sgemm and copy rates, measured on first use and cached per machine under $XDG_CACHE_HOME or "
     "~/.cache/tapestry; tapestry --calibrate measures again) or \"built-in\" (TAPESTRY_RATES=builtin: the "
     "documented defaults); link_rates is \"measured\" once tapestry --calibrate ran under mpirun -n 2; "
     "machine is the cache's key (hostname|CPU model|threads). "
     "Modelled meshes always use the defaults unless given rates. cpu_isa is the CPU kernels' vector "
     "instructions, \"avx512\" "
     "where the CPU has them, else \"avx2\" (TAPESTRY_ISA=avx2 forces AVX2). device is \"cuda\", \"cpu\" or "
     "\"sim\" (TAPESTRY_DEVICE=sim, the "
     "simulated "
     "device); gpu says which GPU, or why none is used; device_transport how slices move between the ranks' "
     "devices (\"nccl\", or \"none: ...\" through the host). TAPESTRY_RANKS=N runs N virtual ranks in one "
     "process.",
     lua::l_mesh},
    {"tp.layout_map", K::Function, "plan", "tp.layout_map(x [,opts])",
     "The shard map of x as text (what :layout prints): which rank holds which box, how many copies "
     "of each piece (replicas), and for a value still to compute from partial results how they merge. "
     "opts.mesh "
     "and opts.search as tp.plan: tp.layout_map(x:constrain(tp.split(1, 4)), {mesh = 4}).",
     lua::l_layout_map},
    {"tp.replicated", K::Function, "plan", "tp.replicated()",
     "A layout with a whole copy of the tensor on every rank: x:constrain(tp.replicated()) makes every "
     "rank compute (or receive, down a binomial tree) the whole value, so every reader finds it where it "
     "runs "
     "(data parallelism's replicated weights). A named tensor so constrained keeps its copies: :layout says "
     "\"replicated on N ranks\".",
     lua::l_replicated},
    {"tp.split", K::Function, "plan", "tp.split(d [,parts])",
     "A layout that splits dim d into parts pieces (default: one per rank).", lua::l_split},
    {"tp.grid", K::Function, "plan", "tp.grid{p1, p2, ...}",
     "A layout with p_i pieces along dim i (1 = not split).", lua::l_grid},
    {"Tensor:layout", K::Method, "plan", "x:layout()",
     "Where x lies, as a layout: a computed (stored) tensor's shards, a value whole on rank 0, else "
     "the plan's result on the current mesh. tostring gives the notation of the print footer, "
     ":tensors and :layout (\"split(1, 4)\", \"grid{2,2}\", \"whole on rank 0\"); x:constrain takes it.",
     lua::l_layout},
    {"Tensor:constrain", K::Method, "plan", "x:constrain(layout)",
     "x with its layout fixed: the planner must produce it split this way (a hint it honours). "
     "Example: y:constrain(tp.split(1)).",
     lua::l_constrain},

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
     "optimizer step (nn.sgd and nn.adam do).",
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

#undef UNARY
#undef BINARY
#undef META

std::string_view short_name(std::string_view n) {
  const size_t p = n.find_last_of(".:");
  return p == std::string_view::npos ? n : n.substr(p + 1);
}

}  // namespace

std::span<const ApiEntry> api_entries() { return kApi; }

const ApiEntry* find_api(std::string_view name) {
  auto exact = [](std::string_view n) -> const ApiEntry* {
    for (const ApiEntry& e : kApi)
      if (e.name == n) return &e;
    return nullptr;
  };
  const std::string s(name);
  // "nn.linear" finds the stdlib's "tapestry.nn.linear".
  for (const std::string& n : {s, "tp." + s, "Tensor:" + s, ":" + s, "Tensor." + s, "tapestry." + s})
    if (const ApiEntry* e = exact(n)) return e;
  return nullptr;
}

std::string format_help(const ApiEntry& e) {
  std::string out = std::string(e.usage) + "\n  " + std::string(e.doc) + "\n";
  if (e.method) out += "  Also a method: x:" + std::string(short_name(e.name)) + "(...).\n";
  return out;
}

std::string reference_markdown() {
  static const std::pair<std::string_view, std::string_view> kGroups[] = {
      {"create", "Creating tensors"},
      {"properties", "Declared properties"},
      {"map", "Elementwise operations"},
      {"operators", "Operators"},
      {"reduce", "Reductions"},
      {"sort", "Sorting and scans"},
      {"contract", "Contractions"},
      {"linalg", "Linear algebra"},
      {"fft", "Fourier transforms (tp.fft)"},
      {"shape", "Shape operations"},
      {"structure", "Diagonals and triangles"},
      {"window", "Windows"},
      {"slice", "Reading slices"},
      {"index", "Indexing: gather, scatter, masks"},
      {"tensor", "Tensor metadata"},
      {"observe", "Observation"},
      {"env", "The environment"},
      {"io", "Files"},
      {"grad", "Gradients"},
      {"plan", "Plans, layouts and the mesh"},
      {"stdlib", "Standard library"},
      {"shell", "Shell commands"},
  };
  std::string out =
      "# Tapestry language reference\n\n"
      "Generated from the API registry (`lang/api.cpp`) by `tapestry --reference`; do not edit.\n"
      "A test fails when this file and the registry disagree.\n";
  for (const ApiEntry& e : kApi)  // an entry in no group would be missing from the reference
    internal_check(std::any_of(std::begin(kGroups), std::end(kGroups),
                               [&](const auto& g) { return g.first == std::string_view(e.group); }));
  for (const auto& [group, title] : kGroups) {
    out += "\n## " + std::string(title) + "\n\n| usage | description |\n|---|---|\n";
    for (const ApiEntry& e : kApi) {
      if (e.group != group) continue;
      std::string usage(e.usage), doc(e.doc);
      for (std::string* s : {&usage, &doc}) {
        size_t p = 0;
        while ((p = s->find('|', p)) != std::string::npos) {
          s->replace(p, 1, "\\|");
          p += 2;
        }
      }
      out += "| `" + usage + "` | " + doc + " |\n";
    }
  }
  return out;
}

}  // namespace tapestry

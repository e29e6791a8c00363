// The registry's entries from creating tensors to windows (the registry: lang/api.hpp; the table's shorthand:
// lang/api_table.hpp).
#include "lang/api_table.hpp"

namespace tapestry::api_table {

namespace {

const ApiEntry kEntries[] = {
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
};

}  // namespace

std::span<const ApiEntry> tensor_entries() { return kEntries; }

}  // namespace tapestry::api_table

// The fuzzer's Lua reproducers: a program as a self-checking script that builds it with the
// tp API and compares each root with the single-rank values (tests/fuzz/program.hpp).
#include <cmath>
#include <cstdio>

#include "engine/ir/error.hpp"
#include "tests/fuzz/program.hpp"

namespace tapestry::fuzz {

namespace {

std::string lnum(double v) {
  if (std::isnan(v)) return "(0/0)";
  if (std::isinf(v)) return v > 0 ? "math.huge" : "-math.huge";
  char buf[40];
  if (v == std::floor(v) && std::abs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.1f", v);
  else std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string ilist(const std::vector<int64_t>& v, int64_t add = 0) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i] + add);
  return s + "}";
}

std::string dq(DType t) { return cat_str("\"", dtype_name(t), "\""); }

}  // namespace

std::string to_lua(const Program& p, const std::vector<std::vector<double>>& expected,
                   const std::vector<double>& tol, const std::string& header,
                   const std::vector<bool>& overflow) {
  std::string o = header;
  o += R"(local function src(shape, seed, dtype)
  local n, i = 1, 0
  for _, d in ipairs(shape) do n = n * d end
  if n == 0 then return tp.zeros(shape, {dtype = dtype}) end  -- nested {} would lose its dims
  local function value()
    local k = (i * 37 + seed * 11 + (i * i) % 7) % 17 - 8
    i = i + 1
    if dtype == "bool" then return k > 0 end
    if dtype == "u8" then return k + 8 end
    if dtype == "i32" or dtype == "i64" or dtype == "i8" then return k end
    return k / 4
  end
  local function fill(d)
    if d > #shape then return value() end
    local t = {}
    for j = 1, shape[d] do t[j] = fill(d + 1) end
    return t
  end
  if dtype == "bool" then return tp.tensor(fill(1)) end
  return tp.tensor(fill(1), {dtype = dtype})
end
-- x zeroed outside the tiles `bits` marks (1 per tile of the grid, row-major), declared so.
local function tiled(x, tiles, bits)
  local shape, grid, mask = x.shape, {}, {}
  for d = 1, #shape do grid[d] = (shape[d] + tiles[d] - 1) // tiles[d] end
  local function fill(d, t)
    if d > #shape then return bits[t + 1] == 1 end
    local out = {}
    for j = 1, shape[d] do out[j] = fill(d + 1, t * grid[d] + (j - 1) // tiles[d]) end
    return out
  end
  local nz = {}
  for k, b in ipairs(bits) do nz[k] = b == 1 end
  return tp.where(tp.tensor(fill(1, 0)), x, 0):declare{tiles = tiles, nonzero = tp.tensor(nz):reshape(grid),
                                                      trust = true}
end
-- x + conj(x^T) in dims d1, d2, as users write it (its packed form's mirror keeps a zero
-- imaginary part +0, as this makes it).
local function hermitian(x, d1, d2) return x + x:transpose(d1, d2):conj() end
local function flat(x)
  local out = {}
  local function walk(v)
    if type(v) == "table" then for _, e in ipairs(v) do walk(e) end
    elseif type(v) == "boolean" then out[#out + 1] = v and 1 or 0
    else out[#out + 1] = v end
  end
  if x.dtype == "c64" or x.dtype == "c128" then  -- real and imaginary parts interleaved
    local re, im = flat(x:real()), flat(x:imag())
    for k = 1, #re do out[2 * k - 1], out[2 * k] = re[k], im[k] end
    return out
  end
  walk(#x.shape == 0 and x:item() or x:totable())
  return out
end
local function same(i, x, dtype, shape, want, tol, overflow)
  assert(x.dtype == dtype, ("root %d: dtype %s, want %s"):format(i, x.dtype, dtype))
  assert(#x.shape == #shape, ("root %d: rank %d, want %d"):format(i, #x.shape, #shape))
  for d = 1, #shape do assert(x.shape[d] == shape[d], ("root %d: dim %d is %d, want %d"):format(i, d, x.shape[d], shape[d])) end
  local got, scale = flat(x), 1
  for _, w in ipairs(want) do if w == w and math.abs(w) ~= math.huge then scale = math.max(scale, math.abs(w)) end end
  local pair = (dtype == "c64" or dtype == "c128") and 2 or 1
  local function finite(v, k)  -- a complex number is finite only when both its parts are
    local lo = k - (k - 1) % pair
    for j = lo, lo + pair - 1 do if v[j] ~= v[j] or math.abs(v[j]) == math.huge then return false end end
    return true
  end
  for k, w in ipairs(want) do
    local g = got[k]
    -- overflow: a product upstream may leave the finite range, where the order decides
    local ok = (g ~= g and w ~= w) or g == w or (tol > 0 and math.abs(g - w) <= tol * scale)
      or (overflow and not (finite(got, k) and finite(want, k)))
    assert(ok, ("root %d element %d: got %.17g, want %.17g"):format(i, k, g, w))
  end
end
)";
  // Shapes and dtypes of the roots come from a C++ build of the same program.
  const std::vector<NodeRef> nodes = build(p);
  int env = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    auto v = [&](int k) { return cat_str("v", s.in[k]); };
    std::string e;
    switch (s.kind) {
      case Kind::Src:
        e = s.a.empty() ? cat_str("tp.tensor(",
                                  s.dt == DType::Bool ? (source_value(0, s.n, s.dt) ? "true" : "false")
                                                      : lnum(source_value(0, s.n, s.dt)),
                                  s.dt == DType::Bool ? ")" : cat_str(", {dtype = ", dq(s.dt), "})"))
                        : cat_str("src(", ilist(s.a), ", ", s.n, ", ", dq(s.dt), ")");
        break;
      case Kind::Full:
        e = cat_str("tp.full(", ilist(s.a), ", ",
                    is_float(s.dt) ? lnum(s.v) : std::to_string(static_cast<int64_t>(s.v)),
                    ", {dtype = ", dq(s.dt), "})");
        break;
      case Kind::Arange:
        e = cat_str("tp.arange(", s.a[0], ", ", s.a[1], ", ", s.a[2], ", {dtype = ", dq(s.dt), "})");
        break;
      case Kind::Rand:
        e = cat_str(s.flag ? "tp.randn(" : "tp.rand(", ilist(s.a), ", {seed = ", s.n, ", dtype = ", dq(s.dt),
                    "})");
        break;
      case Kind::Eye: e = cat_str("tp.eye(", s.a[0], ", ", s.a[1], ", {dtype = ", dq(s.dt), "})"); break;
      case Kind::Unary: e = cat_str("tp.", op_def(s.op).name, "(", v(0), ")"); break;
      case Kind::Binary: e = cat_str("tp.", op_def(s.op).name, "(", v(0), ", ", v(1), ")"); break;
      case Kind::BinaryScalar: e = cat_str("tp.", op_def(s.op).name, "(", v(0), ", ", lnum(s.v), ")"); break;
      case Kind::Where: e = cat_str("tp.where(", v(0), ", ", v(1), ", ", v(2), ")"); break;
      case Kind::Cast: e = cat_str("tp.cast(", v(0), ", ", dq(s.dt), ")"); break;
      case Kind::Reduce:
      case Kind::Mean:
        e = cat_str(v(0), ":", s.kind == Kind::Mean ? std::string_view("mean") : op_def(s.op).name, "(",
                    s.a.empty() ? "nil" : ilist(s.a, 1), ", {keepdim = ", s.flag ? "true" : "false", "})");
        break;
      case Kind::ArgReduce:
        e = cat_str(v(0), ":", op_def(s.op).name, "(", s.n < 0 ? std::string("nil") : std::to_string(s.n + 1),
                    ", {keepdim = ", s.flag ? "true" : "false", "})");
        break;
      case Kind::Matmul: e = cat_str("tp.matmul(", v(0), ", ", v(1), ")"); break;
      case Kind::Einsum:
        e = cat_str("tp.einsum(\"", s.spec, "\"");
        for (size_t k = 0; k < s.in.size(); ++k) e += ", " + v(static_cast<int>(k));
        e += ")";
        break;
      case Kind::Reshape: e = cat_str(v(0), ":reshape(", ilist(s.a), ")"); break;
      case Kind::Permute: e = cat_str(v(0), ":permute", ilist(s.a, 1)); break;
      case Kind::Expand: e = cat_str(v(0), ":expand(", ilist(s.a), ")"); break;
      case Kind::Slice: {
        e = v(0) + "[{";
        for (size_t d = 0; d < s.a.size(); ++d)
          e += cat_str(d ? ", " : "", "{", s.a[d] + 1, ", ", s.a[d] + 1 + (s.c[d] - 1) * s.b[d], ", ", s.b[d],
                       "}");
        e += "}]";
        break;
      }
      case Kind::Narrow: e = cat_str(v(0), ":narrow(", s.n + 1, ", ", s.a[0] + 1, ", ", s.a[1], ")"); break;
      case Kind::Select: e = cat_str(v(0), ":select(", s.n + 1, ", ", s.a[0] + 1, ")"); break;
      case Kind::Cat: {
        e = "tp.cat({";
        for (size_t k = 0; k < s.in.size(); ++k) e += (k ? ", " : "") + v(static_cast<int>(k));
        e += cat_str("}, ", s.n + 1, ")");
        break;
      }
      case Kind::Pad: {
        e = v(0) + ":pad({";
        for (size_t d = 0; d < s.a.size(); ++d) e += cat_str(d ? ", " : "", "{", s.a[d], ", ", s.b[d], "}");
        static const char* modes[] = {"constant", "reflect", "periodic"};
        e += cat_str("}, {mode = \"", modes[s.n], "\"", s.n == 0 ? ", value = " + lnum(s.v) : std::string(),
                     "})");
        break;
      }
      case Kind::Roll:
        e = cat_str(v(0), ":roll(", static_cast<int64_t>(s.v),
                    s.n < 0 ? std::string() : cat_str(", ", s.n + 1), ")");
        break;
      case Kind::Stencil: {
        static const char* b[] = {"zero", "periodic", "reflect"};
        e = cat_str("tp.stencil(", v(0), ", ", v(1), ", {boundary = \"", b[s.n], "\"})");
        break;
      }
      case Kind::Conv2d:
        e = cat_str("tp.conv2d(", v(0), ", ", v(1), ", {stride = {", s.c[0], ", ", s.c[1], "}, padding = {",
                    s.c[2], ", ", s.c[3], "}, dilation = {", s.c[4], ", ", s.c[5], "}, groups = ", s.c[6],
                    "})");
        break;
      case Kind::Pool:
        e = cat_str("tp.", op_def(s.op).name, "(", v(0), ", {", s.c[0], ", ", s.c[1], "}, {stride = {",
                    s.c[2], ", ", s.c[3], "}, padding = {", s.c[4], ", ", s.c[5], "}})");
        break;
      case Kind::Constrain:
        e = s.flag ? cat_str(v(0), ":constrain(tp.replicated())")
                   : cat_str(v(0), ":constrain(tp.grid", ilist(s.a), ")");
        break;
      case Kind::Declare:  // bound to a name and read back: kept packed
        if (s.n == 1) {
          e = cat_str("(function() tp.env.fz", i, " = tiled(", v(0), ", ", ilist(s.a), ", ", ilist(s.b),
                      ") return tp.env.fz", i, " end)()");
          break;
        }
        if (s.n == 2) {
          e = cat_str("(function() tp.env.fz", i, " = hermitian(", v(0), ", ", s.a[0] + 1, ", ", s.a[1] + 1,
                      "):declare{symmetry = tp.hermitian{", s.a[0] + 1, ", ", s.a[1] + 1,
                      "}, trust = true} return tp.env.fz", i, " end)()");
          break;
        }
        e = cat_str("(function() tp.env.fz", i, " = (", v(0), s.flag ? " - " : " + ", v(0), ":transpose(",
                    s.a[0] + 1, ", ", s.a[1] + 1, ")):declare{symmetry = tp.", s.flag ? "anti" : "",
                    "symmetric{", s.a[0] + 1, ", ", s.a[1] + 1, "}, trust = true} return tp.env.fz", i,
                    " end)()");
        break;
      case Kind::Line: {
        const std::string d = std::to_string(s.n + 1), name(op_def(s.op).name);
        if (s.op == Op::Sort && s.a.size() == 3)  // k as drawn (a shrunk x may hold fewer)
          e = cat_str("select(", s.flag ? 2 : 1, ", tp.topk(", v(0), ", math.min(", s.a[1], ", ", v(0),
                      ":size(", d, ")), ", d, ", {largest = ", s.a[0] ? "true" : "false", "}))");
        else if (s.op == Op::Sort)
          e = cat_str(s.flag ? v(0) + ":argsort(" : "(" + v(0) + ":sort(", d,
                      ", {descending = ", s.a[0] ? "true" : "false", "})", s.flag ? "" : ")");
        else if (s.op == Op::Fft)
          e = cat_str("tp.fft.",
                      s.a[0] == 3   ? "irfft("
                      : s.a[0] == 2 ? "rfft("
                      : s.a[0]      ? "ifft("
                                    : "fft(",
                      v(0), ", {dim = ", d, ", norm = \"", s.flag ? "ortho" : "backward", "\"})");
        else if (s.op == Op::Cummax || s.op == Op::Cummin)
          e = cat_str(s.flag ? "select(2, " : "(", v(0), ":", name, "(", d, "))");
        else e = cat_str(v(0), ":", name, "(", d, ")");
        break;
      }
      case Kind::Index: {
        const std::string index =
            cat_str("tp.tensor(", ilist(s.b), ", {dtype = \"i64\"}):reshape", ilist(s.a));
        e = cat_str(v(0), ":", op_def(s.op).name, "(", s.n + 1, ", ", index,
                    s.op == Op::Gather ? std::string() : ", " + v(1), ")");
        break;
      }
      case Kind::WriteRegion: {
        const std::string name = cat_str("tp.env.fuzz_w", env++);
        o += cat_str(name, " = ", v(0), "\n", name, "[{");
        for (size_t d = 0; d < s.a.size(); ++d)
          o += cat_str(d ? ", " : "", "{", s.a[d] + 1, ", ", s.a[d] + s.b[d], "}");
        o += cat_str("}] = ", s.flag ? lnum(s.v) : v(1), "\n");
        e = name;
        break;
      }
    }
    o += cat_str("local v", i, " = ", e, "\n");
  }
  o += "tp.eval(";
  for (size_t r = 0; r < p.roots.size(); ++r) o += cat_str(r ? ", " : "", "v", p.roots[r]);
  o += ")\n";
  for (size_t r = 0; r < p.roots.size() && r < expected.size(); ++r) {
    const NodeRef& n = nodes[p.roots[r]];
    o += cat_str("same(", r + 1, ", v", p.roots[r], ", ", dq(n->dtype), ", ", ilist(n->shape), ", {");
    for (size_t k = 0; k < expected[r].size(); ++k) o += (k ? ", " : "") + lnum(expected[r][k]);
    o += cat_str("}, ", lnum(tol[r]), r < overflow.size() && overflow[r] ? ", true" : "", ")\n");
  }
  o += "print(\"ok\")\n";
  return o;
}

}  // namespace tapestry::fuzz

// Banded stencil pairs on the CPU: a stencil block whose only reader is a map block of this rank
// runs inside it, band by band, so the stencil's band is still in L2 when the map reads it.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/error.hpp"
#include "engine/run/run_block.hpp"
#include "engine/shard/rank_program.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

using plan::Step;
using poly::Box;

void RankProgram::find_banded_pairs() {
  if (dev_) return;
  std::unordered_map<uint64_t, std::vector<size_t>> readers;  // tensor -> my blocks reading it
  std::unordered_map<uint64_t, int> blocks_of;                // node -> my blocks of it
  for (const Step& st : steps()) {
    if (st.kind != Step::Kind::Run) continue;
    const plan::Block& k = g_.blocks[st.index];
    const Node& n = node(k.node);
    ++blocks_of[k.node];
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!sig(k.node).input_slice(i, k.box).empty()) readers[n.inputs[i]->id].push_back(st.index);
  }
  std::unordered_set<uint64_t> leaves;  // tensors this rank sends, or holds as a result shard
  for (const plan::Transfer& x : g_.transfers)
    if (x.from == me_) leaves.insert(x.tensor);
  for (const plan::Shard& o : g_.outputs)
    if (o.rank == me_) leaves.insert(o.tensor);
  for (const Step& st : steps()) {
    if (st.kind != Step::Kind::Run) continue;
    const plan::Block& k = g_.blocks[st.index];
    const Node& w = node(k.node);
    if (w.op != Op::Correlate || split_.count(k.node) || leaves.count(k.node) || blocks_of[k.node] != 1)
      continue;
    const std::vector<size_t>& r = readers[k.node];
    if (r.size() != 1) continue;
    const plan::Block& m = g_.blocks[r[0]];
    const Node& mn = node(m.node);
    if (!runs_into(mn) || mn.op == Op::Correlate || mn.shape.empty() || m.box.extent(0) < 2) continue;
    if (sig(k.node).output_slice(k.box) != k.box) continue;  // its space is its output
    int reads = 0;
    bool exact = true;
    for (size_t i = 0; i < mn.inputs.size(); ++i) {
      if (mn.inputs[i]->id != k.node) continue;
      ++reads;
      exact = exact && sig(m.node).input_slice(i, m.box) == k.box;
    }
    if (reads != 1 || !exact) continue;
    banded_into_[st.index] = r[0];
    deferred_[k.node] = st.index;
  }
}

void RankProgram::run_banded(size_t b) {
  const plan::Block& k = g_.blocks[b];
  const Node& n = node(k.node);
  const poly::Signature& s = sig(k.node);
  const Box out_box = s.output_slice(k.box);
  auto out = Value::alloc(n.dtype, out_box.extents());
  struct Stencil {
    size_t input;
    const Node* node;
    const poly::Signature* sig;
    std::shared_ptr<Value> band;  // its rows of one band
  };
  std::vector<Stencil> stencils;
  std::vector<View> whole(n.inputs.size());
  std::vector<Box> whole_box(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const uint64_t id = n.inputs[i]->id;
    if (deferred_.count(id)) {
      stencils.push_back({i, &node(id), &sig(id), nullptr});
    } else {
      whole_box[i] = s.input_slice(i, k.box);
      whole[i] = gather(id, whole_box[i]);
    }
  }
  // Bands of ~512 KiB of f32 rows: the stencil's band stays in L2 until the map reads it.
  constexpr int64_t kBandElems = int64_t(1) << 17;
  const int64_t rows = k.box.extent(0);
  const int64_t row_elems = std::max<int64_t>(1, out_box.volume() / rows);
  const int64_t band = std::clamp<int64_t>(kBandElems / row_elems, 1, rows);
  const bool stream = out_box.volume() * static_cast<int64_t>(dtype_size(n.dtype)) >= (int64_t(32) << 20);
  int u_leaf = -1;
  float c = 0;
  const bool axpy = stencils.size() == 1 &&
                    cpu::axpy_form(block_map_program(n), static_cast<int>(stencils[0].input), u_leaf, c);
  std::vector<View> ins(n.inputs.size());
  for (int64_t r0 = 0; r0 < rows; r0 += band) {
    Box cb = k.box;
    cb.lo[0] = k.box.lo[0] + r0;
    cb.hi[0] = std::min(k.box.hi[0], cb.lo[0] + band - 1);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (whole[i].buf) ins[i] = window(whole[i], whole_box[i], s.input_slice(i, cb));
    const View out_band = window(out->v, out_box, s.output_slice(cb));
    if (axpy) {  // u + c * stencil: applied by the stencil kernel as it stores
      const Stencil& st = stencils[0];
      const Box wb = s.input_slice(st.input, cb);
      const Node& w = *st.node;
      const View x = gather(w.inputs[0]->id, st.sig->input_slice(0, wb));
      const View taps = gather(w.inputs[1]->id, st.sig->input_slice(1, wb));
      if (run_stencil_axpy_into(w, *st.sig, wb, {x, taps}, ins[static_cast<size_t>(u_leaf)], c, out_band,
                                stream))
        continue;
    }
    for (Stencil& st : stencils) {
      const Box wb = s.input_slice(st.input, cb);  // the band of the stencil's output
      const Node& w = *st.node;
      const View x = gather(w.inputs[0]->id, st.sig->input_slice(0, wb));
      const View taps = gather(w.inputs[1]->id, st.sig->input_slice(1, wb));
      if (!st.band) {
        Shape full = wb.extents();
        full[0] = std::max<int64_t>(full[0], band);
        st.band = Value::alloc(w.dtype, full);
      }
      Shape part = st.band->v.shape;
      part[0] = wb.extent(0);
      const View bv =
          st.band->v.sliced(std::vector<int64_t>(part.size(), 0), std::vector<int64_t>(part.size(), 1), part);
      run_block_into(w, *st.sig, wb, {x, taps}, bv);
      ins[st.input] = bv;
    }
    run_block_into(n, s, cb, ins, out_band, stream);
  }
  hold(k.node, out_box, out->view());
}

}  // namespace tapestry

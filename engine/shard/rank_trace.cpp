// A rank's steps as trace events (engine/telemetry/trace.hpp): blocks, transfers named by the
// move they belong to, combines and exchanges named by their collective.
#include "engine/ir/error.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

using plan::Step;
using poly::Box;

void RankProgram::trace_step(const Step& s, double t0_us, double dur_us) {
  trace::Event e;
  e.pid = me_;
  e.ts_us = t0_us;
  e.dur_us = dur_us;
  e.tid = trace::kComm;
  auto box_args = [](const Box& b, int64_t bytes) {
    return cat_str("\"box\":", trace::json_string(poly::to_string(b)), ",\"bytes\":", bytes);
  };
  switch (s.kind) {
    case Step::Kind::Exchange: trace_exchange(s, e); break;
    case Step::Kind::Run: {
      const plan::Block& k = g_.blocks[s.index];
      const Node& n = node(k.node);
      const Box out = sig(k.node).output_slice(k.box);
      e.cat = "block";
      e.tid = trace::kCompute;
      e.name = std::string(op_def(n.op).name);
      e.args = cat_str("\"op\":", trace::json_string(e.name), ",\"block\":", s.index, ",",
                       box_args(k.box, box_payload_bytes(n, out)),
                       split_.count(k.node) ? ",\"partial\":true" : "");
      break;
    }
    case Step::Kind::Send:
    case Step::Kind::Recv: {
      const plan::Transfer& x = g_.transfers[s.index];
      const Node& n = node(x.tensor);
      const bool out = s.kind == Step::Kind::Send;
      // Named by the move it is part of: "broadcast: send to 3", "all-gather: recv from 1".
      const char* kind =
          plan::move_kind_name(moves_.groups[static_cast<size_t>(moves_.transfer_group[s.index])].kind);
      e.cat = out ? "send" : "recv";
      e.name = cat_str(kind, ": ", out ? "send to " : "recv from ", out ? x.to : x.from);
      e.args = cat_str("\"op\":", trace::json_string(op_def(n.op).name), ",\"transfer\":", s.index,
                       ",\"move\":\"", kind, "\",", box_args(x.slice, box_payload_bytes(n, x.slice)));
      break;
    }
    case Step::Kind::Combine: {
      const plan::Combine& m = g_.combines[s.index];
      const Node& n = node(m.node);
      // Named by the collective it is: "all-reduce sum", "reduce-scatter sum", "reduce max".
      const char* kind =
          plan::move_kind_name(moves_.groups[static_cast<size_t>(moves_.combine_group[s.index])].kind);
      e.cat = "combine";
      e.name = cat_str(kind, " ", poly::combine_name(m.kind), " (", op_def(n.op).name, ")");
      const bool devices = on_peers_combine(s.index);
      const comm::CombineRoute& route = devices ? peer_coll_.combines[s.index] : coll_.combines[s.index];
      e.args = cat_str("\"op\":", trace::json_string(op_def(n.op).name), ",\"combine\":", s.index,
                       ",\"move\":\"", kind, "\",\"partials\":", m.partials.size(), ",",
                       box_args(m.out, box_payload_bytes(n, m.out)),
                       !route.collective                      ? ""
                       : !route.scatter.empty()               ? ",\"collective\":\"reduce-scatter\""
                       : route.spec.root == comm::kAllMembers ? ",\"collective\":\"all-reduce\""
                                                              : ",\"collective\":\"reduce\"",
                       devices ? ",\"on\":\"device peers\"" : "");
      break;
    }
  }
  trace::record(std::move(e));
}

void RankProgram::trace_exchange(const Step& s, trace::Event& e) {
  const plan::Exchange& x = g_.exchanges[s.index];
  const Node& n = node(x.tensor);
  int64_t out = 0, in = 0;
  for (size_t t : x.transfers) {
    if (g_.transfers[t].from == me_) out += box_payload_bytes(n, g_.transfers[t].slice);
    if (g_.transfers[t].to == me_) in += box_payload_bytes(n, g_.transfers[t].slice);
  }
  const char* kind = plan::exchange_kind_name(x.kind);
  e.cat = "exchange";
  e.name = cat_str(kind, " (", op_def(n.op).name, ")");
  e.args =
      cat_str("\"op\":", trace::json_string(op_def(n.op).name), ",\"exchange\":", s.index, ",\"move\":\"",
              kind, "\",\"members\":", x.members.size(), ",\"bytes_sent\":", out, ",\"bytes_received\":", in,
              coll_.exchanges[s.index].collective ? cat_str(",\"collective\":\"", kind, "\"") : "");
}

}  // namespace tapestry

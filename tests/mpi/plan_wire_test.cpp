// The plan wire format and the worker protocol: a decoded plan runs to the same values as the
// original, no corruption (truncation, any flipped byte, a wrong version, a lying count) gets
// past the decoder as anything but an Error, and failures map to statuses and back.
#include <doctest/doctest.h>

#include <cstring>
#include <new>
#include <stdexcept>

#include "engine/comm/loopback.hpp"
#include "engine/device/peers_local.hpp"
#include "engine/device/sim_backend.hpp"
#include "engine/dist/head.hpp"
#include "engine/dist/plan_wire.hpp"
#include "engine/dist/replica.hpp"
#include "engine/dist/worker.hpp"
#include "engine/io/parallel_io.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/codec.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/planner.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/telemetry/trace.hpp"

using namespace tapestry;

namespace {

// A plan with sources held on rank 0, a matmul, a split reduction and a map, on `ranks`.
struct Example {
  NodeRef a, b, y;
  plan::PlannedGraph pg;
  explicit Example(int ranks) {
    a = build::rand({12, 8}, 1, DType::F32);
    b = build::rand({8, 6}, 2, DType::F32);
    evaluate({a, b});  // values on rank 0: the plan's initial shards
    y = build::binary(Op::Add, build::reduce(Op::Sum, build::matmul(a, b), {1}, true),
                      build::Operand::number(1));
    plan::PlannerState planner;
    pg = plan::plan_observation(planner, {y}, plan::Mesh::this_machine(ranks), {});
  }
};

std::vector<float> values(const Value& v) { return {v.data<float>(), v.data<float>() + v.v.numel()}; }

void reseal(std::vector<char>& bytes) {  // a valid checksum over a tampered body
  const uint64_t sum = fnv1a(std::span<const char>(bytes).subspan(kSealBytes));
  std::memcpy(bytes.data() + 16, &sum, 8);
}

}  // namespace

TEST_CASE("a decoded plan has the same structure and runs to the same values") {
  Example ex(3);
  const plan::ShardedGraph& g = ex.pg.plan.graph();
  const std::vector<char> bytes = encode_plan(g);
  plan::ShardedGraph d = decode_plan(bytes);
  CHECK(d.num_ranks == 3);
  CHECK(d.blocks.size() == g.blocks.size());
  CHECK(d.transfers.size() == g.transfers.size());
  CHECK(d.combines.size() == g.combines.size());
  CHECK(d.steps == g.steps);
  REQUIRE(d.initial.size() == g.initial.size());
  REQUIRE(d.roots.size() == g.roots.size());
  for (size_t i = 0; i < g.blocks.size(); ++i) {
    CHECK(d.blocks[i].box == g.blocks[i].box);
    CHECK(d.blocks[i].rank == g.blocks[i].rank);
    CHECK(d.find(d.blocks[i].node)->op == g.find(g.blocks[i].node)->op);
  }
  // Leaves arrive without data; give them rank 0's, as the worker's rank 0 holds them.
  for (size_t i = 0; i < g.initial.size(); ++i) {
    const Node* mine = d.find(d.initial[i].tensor);
    REQUIRE(mine != nullptr);
    CHECK(mine->value == nullptr);
    set_value(*mine, g.find(g.initial[i].tensor)->value);
  }
  run_plan(d);
  evaluate({ex.y});
  const Node* got = d.find(d.roots[0]);
  REQUIRE(got->value != nullptr);
  const std::vector<float> want = values(*ex.y->value), have = values(*got->value);
  REQUIRE(want.size() == have.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(have[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

// An exchange's place in the transfer order (plan::Exchange::after) travels with it: device
// peers post each exchange there, on every member alike, and one read off the wire without it
// ran its transfers one by one instead of as one grouped collective.
TEST_CASE("a decoded plan keeps each exchange's place in the transfer order") {
  // Rows to columns and back on 4 ranks: two all-to-alls on one group, the second after the
  // first one's transfers. Workers decode the whole plan (coordinator.cpp), as here.
  auto in_v = Value::alloc(DType::F32, {8, 8});
  for (int64_t i = 0; i < 64; ++i) in_v->data<float>()[i] = static_cast<float>(i % 13) - 6;
  const NodeRef in = make_source(in_v, {8, 8}, DType::F32);
  const NodeRef x = build::unary(Op::Exp, in), y = build::unary(Op::Neg, x), z = build::unary(Op::Abs, y);
  plan::Assignment a;
  a[x->id] = plan::grid_blocks(poly::signature_of(*x), {4, 1}, 4);
  a[y->id] = plan::grid_blocks(poly::signature_of(*y), {1, 4}, 4);
  a[z->id] = plan::grid_blocks(poly::signature_of(*z), {4, 1}, 4);
  std::vector<plan::Shard> initial;
  for (int r = 0; r < 4; ++r)
    initial.push_back(plan::Shard{in->id, poly::Box({2 * r, 0}, {2 * r + 1, 7}), r});
  const plan::ShardedGraph g = plan::lower({in, x, y, z}, a, initial, {z}, 4);
  REQUIRE(g.exchanges.size() == 2);
  REQUIRE(g.exchanges[1].after > 0);
  const plan::ShardedGraph d = decode_plan(encode_plan(g));
  REQUIRE(d.exchanges.size() == g.exchanges.size());
  for (size_t e = 0; e < g.exchanges.size(); ++e) {
    CHECK(g.exchanges[e].after != plan::Exchange::kUnplaced);
    CHECK(d.exchanges[e].after == g.exchanges[e].after);
    CHECK(d.exchanges[e].transfers == g.exchanges[e].transfers);
  }
  // Combines keep theirs too: a k-split matmul after the redistribution, all-reduced.
  auto kv = Value::alloc(DType::F32, {8, 4});
  for (int64_t i = 0; i < 32; ++i) kv->data<float>()[i] = static_cast<float>(i % 5);
  const NodeRef kw = make_source(kv, {8, 4}, DType::F32), ky = build::matmul(z, kw);
  a[ky->id] = plan::grid_blocks(poly::signature_of(*ky), {1, 1, 4}, 4);
  initial.push_back(plan::Shard{kw->id, poly::Box::of_shape(kw->shape), 0});
  const plan::ShardedGraph gk =
      plan::lower({in, x, y, z, kw, ky}, a, initial, {ky}, 4, {{ky->id, plan::CombineMode::AllReduce}});
  REQUIRE(!gk.combines.empty());
  const plan::ShardedGraph dk = decode_plan(encode_plan(gk));
  REQUIRE(dk.combines.size() == gk.combines.size());
  for (size_t c = 0; c < gk.combines.size(); ++c) {
    CHECK(gk.combines[c].after > 0);
    CHECK(dk.combines[c].after == gk.combines[c].after);
    CHECK(dk.combines[c].exchanges_before == gk.combines[c].exchanges_before);
  }
  // A placement past the plan's transfers is no plan: rejected like any other bad index.
  plan::ShardedGraph beyond = g;
  beyond.exchanges[1].after = g.transfers.size() + 1;
  CHECK_THROWS_WITH_AS(decode_plan(encode_plan(beyond)), doctest::Contains("placed after transfer"), Error);
  // The decoded plan runs on simulated devices of each rank's own, each exchange as one
  // grouped collective (unplaced, they went transfer by transfer).
  for (const plan::Shard& h : d.initial)  // the sources' data, which the plan wire does not carry
    if (!d.find(h.tensor)->value) set_value(*d.find(h.tensor), in_v);
  comm::LoopbackHub hub(4);
  HostBackend between;
  comm::LocalPeersHub peers(4, between);
  std::vector<std::unique_ptr<SimDevice>> devs;
  std::vector<std::unique_ptr<RankProgram>> ranks;
  for (int r = 0; r < 4; ++r) {
    devs.push_back(std::make_unique<SimDevice>());
    ranks.push_back(std::make_unique<RankProgram>(d, hub.endpoint(r), StoreKeys{}, devs.back().get()));
    ranks.back()->use_device_peers(&peers.endpoint(r));
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (auto& p : ranks) moved = p->advance() || moved;
  }
  for (auto& p : ranks) CHECK(p->done());
  CHECK(peers.exchanges() == 2);
  CHECK(peers.pending() == 0);
}

TEST_CASE("every truncation and every flipped byte is rejected with an Error") {
  Example ex(2);
  const std::vector<char> bytes = encode_plan(ex.pg.plan.graph());
  for (size_t n = 0; n < bytes.size(); ++n)
    CHECK_THROWS_AS(decode_plan(std::span<const char>(bytes.data(), n)), Error);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<char> bad = bytes;
    bad[i] ^= 0x5a;
    CHECK_THROWS_AS(decode_plan(bad), Error);
  }
  std::vector<char> longer = bytes;
  longer.push_back(0);
  CHECK_THROWS_AS(decode_plan(longer), Error);
}

TEST_CASE("a wrong version or a lying body says why") {
  Example ex(2);
  std::vector<char> bytes = encode_plan(ex.pg.plan.graph());
  std::vector<char> v2 = bytes;
  const uint32_t version = kPlanWireVersion + 1;
  std::memcpy(v2.data() + 4, &version, 4);
  CHECK_THROWS_WITH_AS(decode_plan(v2), doctest::Contains("wire version"), Error);
  // Resealed, so only the decoder's own checks stand between the body and make_node.
  std::vector<char> ranks0 = bytes;
  std::memset(ranks0.data() + 24, 0, 4);
  reseal(ranks0);
  CHECK_THROWS_WITH_AS(decode_plan(ranks0), doctest::Contains("rank count"), Error);
  std::vector<char> huge = bytes;
  const uint64_t count = uint64_t(1) << 60;  // the node count
  std::memcpy(huge.data() + 28, &count, 8);
  reseal(huge);
  CHECK_THROWS_WITH_AS(decode_plan(huge), doctest::Contains("exceeds the message"), Error);
}

// A plan sent as its choices: each rank lowers its own part from the decoded message, the parts
// match the plan's, and run together they give the plan's values.
TEST_CASE("a plan's choices decode and every rank lowers its own part from them") {
  Example ex(3);
  const plan::ShardedGraph& g = ex.pg.plan.graph();
  const std::vector<char> bytes = encode_choices({plan::lowering_input(ex.pg), ex.pg.plan.choice});
  const PlanChoices d = decode_choices(bytes);
  CHECK(d.input.mesh.ranks == 3);
  CHECK(d.input.topo.size() == ex.pg.topo.size());
  CHECK(d.input.initial.size() == ex.pg.initial.size());
  REQUIRE(d.choice.size() == ex.pg.plan.choice.size());
  auto want = ex.pg.plan.choice.begin();
  for (auto got = d.choice.begin(); got != d.choice.end(); ++got, ++want) CHECK(got->second == want->second);
  std::vector<plan::ShardedGraph> parts;
  for (plan::Rank r = 0; r < 3; ++r) {
    parts.push_back(plan::lower_choice(d.input, d.choice, r));
    const plan::ShardedGraph mine = plan::restrict_to_rank(g, r);
    CHECK(parts.back().blocks.size() == mine.blocks.size());
    CHECK(parts.back().transfers.size() == mine.transfers.size());
    CHECK(parts.back().combines.size() == mine.combines.size());
    CHECK(parts.back().steps == mine.steps);
  }
  for (const plan::Shard& h : parts[0].initial) {  // rank 0's data, as in the test above
    const Node* mine = parts[0].find(h.tensor);
    for (size_t i = 0; i < d.input.topo.size(); ++i)
      if (d.input.topo[i].get() == mine) set_value(*mine, ex.pg.topo[i]->value);
  }
  run_plan_parts(parts);
  evaluate({ex.y});
  const Node* got = parts[0].find(parts[0].roots[0]);
  REQUIRE(got->value != nullptr);
  const std::vector<float> w = values(*ex.y->value), have = values(*got->value);
  REQUIRE(w.size() == have.size());
  for (size_t i = 0; i < w.size(); ++i) CHECK(have[i] == doctest::Approx(w[i]).epsilon(1e-5));
}

TEST_CASE("a choices message that is cut, flipped or not the plan's op is rejected with an Error") {
  Example ex(2);
  const PlanChoices good{plan::lowering_input(ex.pg), ex.pg.plan.choice};
  const std::vector<char> bytes = encode_choices(good);
  for (size_t n = 0; n < bytes.size(); ++n)
    CHECK_THROWS_AS(decode_choices(std::span<const char>(bytes.data(), n)), Error);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<char> bad = bytes;
    bad[i] ^= 0x5a;
    CHECK_THROWS_AS(decode_choices(bad), Error);
  }
  CHECK_THROWS_WITH_AS(decode_choices(encode_plan(ex.pg.plan.graph())), doctest::Contains("rejected"), Error);
  REQUIRE(!good.choice.empty());
  const uint64_t op = good.choice.begin()->first;
  PlanChoices more_parts = good;
  more_parts.choice[op].parts.push_back(1);
  CHECK_THROWS_WITH_AS(decode_choices(encode_choices(more_parts)), doctest::Contains("index dims"), Error);
  PlanChoices too_many = good;
  too_many.choice[op].parts[0] = 1000;
  CHECK_THROWS_WITH_AS(decode_choices(encode_choices(too_many)), doctest::Contains("into 1000 parts"), Error);
  PlanChoices off_mesh = good;
  off_mesh.choice[op].rank = 2;
  CHECK_THROWS_WITH_AS(decode_choices(encode_choices(off_mesh)), doctest::Contains("outside the mesh of 2"),
                       Error);
  PlanChoices no_bands = good;
  no_bands.choice[op].bands = 0;
  CHECK_THROWS_WITH_AS(decode_choices(encode_choices(no_bands)), doctest::Contains("0 bands"), Error);
  PlanChoices banded = good;  // bands travel with the choice (plan wire version 6)
  banded.choice[op].bands = 4;
  CHECK(decode_choices(encode_choices(banded)).choice.begin()->second.bands == 4);  // op is the first
  PlanChoices stranger = good;
  stranger.choice[build::rand({3}, 9, DType::F32)->id] = plan::Candidate{{1}};
  CHECK_THROWS_WITH_AS(decode_choices(encode_choices(stranger)), doctest::Contains("does not list"), Error);
}

TEST_CASE("commands and statuses round-trip and are checked") {
  Command c = Command::of(Command::Run, 7, {'a', 'b', 'c'}, Command::Trace);
  std::vector<char> bytes = encode_command(c);
  Command back = decode_command(bytes);
  CHECK(back.kind == Command::Run);
  CHECK(back.epoch == 7);
  CHECK(back.plan == c.plan);
  CHECK(back.flags == Command::Trace);
  bytes.pop_back();
  CHECK_THROWS_WITH_AS(decode_command(bytes), doctest::Contains("command rejected: truncated"), Error);

  // Store keys (protocol 3): initial shards read from, results kept in the shard store.
  c.store.initial = {0, 42};
  c.store.roots = {43};
  back = decode_command(encode_command(c));
  CHECK(back.store.initial == c.store.initial);
  CHECK(back.store.roots == c.store.roots);
  CHECK(back.plan == c.plan);
  Command drop = Command::of(Command::Drop);
  drop.drop = {42, 43};
  bytes = encode_command(drop);
  back = decode_command(bytes);
  CHECK(back.kind == Command::Drop);
  CHECK(back.drop == drop.drop);
  bytes.push_back('x');
  CHECK_THROWS_WITH_AS(decode_command(bytes), doctest::Contains("left over"), Error);

  Status s = Status::failed(Status::User, 9, "rank 2: broken");
  s.blocks = 1, s.messages = 2, s.bytes = 3;
  s.transfer_bytes = 4, s.combine_bytes = 5, s.gathered_bytes = 6;
  s.spills = 7, s.spill_bytes = 8, s.spill_readbacks = 9;
  s.trace = {'t', 'r'};
  std::vector<char> sbytes = encode_status(s);
  Status sb = decode_status(sbytes);
  CHECK(sb.kind == Status::Failed);
  CHECK(sb.message == "rank 2: broken");
  CHECK(sb.bytes == 3);
  CHECK(sb.transfer_bytes == 4);
  CHECK(sb.combine_bytes == 5);
  CHECK(sb.gathered_bytes == 6);
  CHECK(sb.spills == 7);
  CHECK(sb.spill_bytes == 8);
  CHECK(sb.spill_readbacks == 9);
  CHECK(sb.trace == s.trace);
  sbytes[0] ^= 1;
  CHECK_THROWS_WITH_AS(decode_status(sbytes), doctest::Contains("status rejected: bad magic"), Error);
}

TEST_CASE("trace events round-trip relative to the run's start, and truncation is caught") {
  std::vector<trace::Event> ev = {{"block", "matmul", 0, trace::kCompute, 1000.0, 5.0, "\"bytes\":64"},
                                  {"send", "send to 0", 0, trace::kComm, 1010.0, 1.0, ""}};
  std::vector<char> bytes = trace::encode_events(ev, 1000.0);
  std::vector<trace::Event> back = trace::decode_events(bytes, 50.0);
  REQUIRE(back.size() == 2);
  CHECK(back[0].name == "matmul");
  CHECK(back[0].ts_us == doctest::Approx(50.0));
  CHECK(back[1].ts_us == doctest::Approx(60.0));
  CHECK(back[1].tid == trace::kComm);
  CHECK(back[0].args == "\"bytes\":64");
  bytes.pop_back();
  CHECK_THROWS_WITH_AS(trace::decode_events(bytes, 0.0), doctest::Contains("trace message rejected"), Error);
}

TEST_CASE("an Io command carries a parallel .npy job, checked on receipt") {
  io::IoTask t;
  t.kind = io::IoTask::Write;
  t.path = "/tmp/x.npy.partial-1";
  t.key = 77;
  t.header = io::make_npy_header(DType::F64, {6, 4});
  t.shards = {plan::Shard{77, poly::Box({0, 0}, {2, 3}), 0}, plan::Shard{77, poly::Box({3, 0}, {5, 3}), 1}};
  Command c = Command::of(Command::Io, 5, io::encode_io({t}));
  const Command back = decode_command(encode_command(c));
  CHECK(back.kind == Command::Io);
  const std::vector<io::IoTask> got = io::decode_io(back.plan);
  REQUIRE(got.size() == 1);
  CHECK(got[0].kind == io::IoTask::Write);
  CHECK(got[0].path == t.path);
  CHECK(got[0].key == 77);
  CHECK(got[0].header.shape == t.header.shape);
  CHECK(got[0].header.data_offset == t.header.data_offset);
  REQUIRE(got[0].shards.size() == 2);
  CHECK(got[0].shards[1].box == t.shards[1].box);
  CHECK(got[0].shards[1].rank == 1);
  // Every truncation is an Error, never a crash.
  for (size_t n = 0; n < back.plan.size(); ++n)
    CHECK_THROWS_AS(io::decode_io(std::span<const char>(back.plan.data(), n)), Error);
}

TEST_CASE("device peers on the wire: a Peers command, the DevicePeers flag and a Hello's caps (protocol 5)") {
  const std::string id = "simulated";
  Command c = Command::of(Command::Peers, 0, std::vector<char>(id.begin(), id.end()));
  Command back = decode_command(encode_command(c));
  CHECK(back.kind == Command::Peers);
  CHECK(std::string(back.plan.begin(), back.plan.end()) == id);
  Command run = Command::of(Command::Run, 3, {'p'}, Command::Trace | Command::DevicePeers);
  std::vector<char> bytes = encode_command(run);
  back = decode_command(bytes);
  CHECK(back.flags == (Command::Trace | Command::DevicePeers));
  bytes[9] = Command::Choices;  // the flags byte after magic, version and kind (protocol 8)
  CHECK(decode_command(bytes).flags == Command::Choices);
  bytes[9] = 8;  // an unknown flag
  CHECK_THROWS_WITH_AS(decode_command(bytes), doctest::Contains("command flags"), Error);

  Status hello;
  hello.kind = Status::Hello;
  hello.message = "4242 node7";
  hello.caps = Status::CanJoinPeers;
  const Status sb = decode_status(encode_status(hello));
  CHECK(sb.kind == Status::Hello);
  CHECK(sb.caps == Status::CanJoinPeers);
  CHECK(sb.message == "4242 node7");
}

TEST_CASE("failure statuses map each exception kind to a status and back") {
  auto failed = [](auto throw_it) {
    try {
      throw_it();
    } catch (const std::exception&) {
      return failure_status(3, 9);
    }
    return Status{};
  };
  const Status user = failed([] { throw Error("bad shape"); });
  CHECK(user.kind == Status::Failed);
  CHECK(user.error == Status::User);
  CHECK(user.epoch == 9);
  CHECK(user.message == "rank 3: bad shape");
  CHECK(failed([] { throw Error("rank 3: already named"); }).message == "rank 3: already named");
  CHECK(failed([] { throw std::bad_alloc(); }).message == "rank 3: out of memory");
  const Status internal = failed([] { throw InternalError("a bug"); });
  CHECK(internal.error == Status::Internal);
  CHECK(failed([] { throw std::logic_error("odd"); }).error == Status::Internal);
  const Status cancelled = failed([] { throw Cancelled(); });
  CHECK(cancelled.error == Status::Cancelled);

  CHECK_THROWS_WITH_AS(throw_failure(decode_status(encode_status(user))), "rank 3: bad shape", Error);
  CHECK_THROWS_WITH_AS(throw_failure(internal), "rank 3: a bug", InternalError);
  CHECK_THROWS_AS(throw_failure(cancelled), Cancelled);
}

TEST_CASE("engine.dist.replica.restore_job_round_trip") {
  RestoreJob job{"/tmp/tapestry-1/salvage-2", {{7, 0, 0}, {7, 1, 1}, {9, 2, 2}}};
  const RestoreJob back = decode_restore(encode_restore(job));
  CHECK(back.dir == job.dir);
  REQUIRE(back.entries.size() == 3);
  CHECK(back.entries[2].key == 9);
  CHECK(back.entries[1].old_rank == 1);
  std::vector<char> bytes = encode_restore(job);
  bytes.back() ^= 1;  // the checksum catches it
  CHECK_THROWS_AS(decode_restore(bytes), Error);
}

TEST_CASE("engine.dist.head.job_address_round_trip") {
  const JobAddress a{"node7", 40123, "abc123", 4242, "/scratch/my dir/salvage-1"};
  const std::optional<JobAddress> b = parse_job_address(format_job_address(a));
  REQUIRE(b.has_value());
  CHECK(b->host == "node7");
  CHECK(b->port == 40123);
  CHECK(b->token == "abc123");
  CHECK(b->driver_pid == 4242);
  CHECK(b->salvage_dir == "/scratch/my dir/salvage-1");
  CHECK_FALSE(parse_job_address("node7 notaport").has_value());
  CHECK_FALSE(parse_job_address("").has_value());
}

#include <doctest/doctest.h>

#include "engine/plan/mesh.hpp"

using namespace tapestry::plan;

// Row-major coordinates over named axes: ranks differing on the outer axis talk over its link.
TEST_CASE("engine.plan.mesh.axes_pick_the_outermost_differing_link") {
  const Link net{25e9, 2e-6}, nvlink{300e9, 1e-6};
  const Mesh m = Mesh::of_axes({{"nodes", 4, net}, {"gpus", 8, nvlink}});
  CHECK(m.ranks == 32);
  CHECK(m.axes_string() == "nodes=4 x gpus=8");
  CHECK(m.link(0, 7) == nvlink);   // node 0, gpus 0 and 7
  CHECK(m.link(0, 8) == net);      // node 0 and node 1
  CHECK(m.link(9, 15) == nvlink);  // both on node 1
  CHECK(m.link(15, 16) == net);
  CHECK(m.transfer_time(0, 1, 3e9) < m.transfer_time(0, 8, 3e9));
  // The legacy fields agree: a node is one outer coordinate.
  CHECK(m.ranks_per_node == 8);
  CHECK(m.node_of(15) == 1);
  // Three axes: the middle one when only it and the inner differ.
  const Link mid{50e9, 1e-6};
  const Mesh t = Mesh::of_axes({{"racks", 2, net}, {"nodes", 3, mid}, {"gpus", 4, nvlink}});
  CHECK(t.ranks == 24);
  CHECK(t.link(0, 4) == mid);   // rack 0: node 0 and node 1
  CHECK(t.link(0, 12) == net);  // rack 0 and rack 1
  CHECK(t.link(5, 6) == nvlink);
  CHECK(t.hash() != m.hash());
  CHECK(!(t == m));
}

// Which timed points share a counter session (--counter-batch), without a GPU.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "core/sweep_spec.hpp"
#include "run/counter_phase.hpp"
#include "run/plan.hpp"

using namespace attnprof;
using namespace attnprof::run;

namespace {

std::vector<Point> points_of(const char* axes) {
  const auto spec = core::parse_axes(axes);
  return plan_points(spec.shapes, {{"reference", core::KernelKind::materialized}, {"fused", core::KernelKind::fused}});
}

core::Record record_of(const Point& p, core::Status status, const char* counters) {
  core::Record r;
  r.shape = p.shape;
  r.kernel = p.kernel;
  r.status = status;
  r.counters.status = core::parse_enum<core::CounterStatus>(counters);
  return r;
}

std::vector<int> indices(const CounterGroup& g) {
  std::vector<int> out;
  for (const auto& p : g.points) out.push_back(p.index);
  return out;
}

}  // namespace

TEST_CASE("counter groups: pending points in sweep order, up to the batch size") {
  const auto points = points_of("batch=1;heads=2;seq=64,128,256,512,1024;hdim=64;dtype=bf16");  // 10 points
  REQUIRE(points.size() == 10);
  std::map<std::string, core::Record> done;
  for (const auto& p : points) done[p.key] = record_of(p, core::Status::ok, "pending");

  SECTION("one group when the batch holds them all") {
    const auto groups = plan_counter_groups(points, done, 32, 1);
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].points.size() == 10);
    REQUIRE(groups[0].records.size() == 10);
    for (size_t i = 0; i < 10; ++i) CHECK(groups[0].records[i].kernel == groups[0].points[i].kernel);
  }
  SECTION("groups of even size, none over the batch") {
    const auto groups = plan_counter_groups(points, done, 4, 1);
    REQUIRE(groups.size() == 3);
    CHECK(indices(groups[0]) == std::vector<int>{0, 1, 2, 3});
    CHECK(indices(groups[1]) == std::vector<int>{4, 5, 6, 7});
    CHECK(indices(groups[2]) == std::vector<int>{8, 9});
  }
  SECTION("a batch of one: a session per point") {
    CHECK(plan_counter_groups(points, done, 1, 1).size() == 10);
  }
  SECTION("every device's worker gets a share") {
    const auto groups = plan_counter_groups(points, done, 32, 2);
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].points.size() == 5);
    CHECK(groups[1].points.size() == 5);
    CHECK(plan_counter_groups(points, done, 32, 64).size() == 10);  // more devices than points
  }
}

TEST_CASE("counter groups leave out what is not pending and isolate incorrect points") {
  const auto points = points_of("batch=1;heads=2;seq=64,128,256;hdim=64;dtype=bf16");  // 6 points
  std::map<std::string, core::Record> done;
  done[points[0].key] = record_of(points[0], core::Status::ok, "pending");
  done[points[1].key] = record_of(points[1], core::Status::ok, "ok");            // counted already
  done[points[2].key] = record_of(points[2], core::Status::incorrect, "pending");
  done[points[3].key] = record_of(points[3], core::Status::failed, "not_collected");
  done[points[4].key] = record_of(points[4], core::Status::ok, "pending");
  // points[5]: not done (interrupted sweep)
  const auto groups = plan_counter_groups(points, done, 32, 1);
  REQUIRE(groups.size() == 2);
  CHECK(indices(groups[0]) == std::vector<int>{2});  // the incorrect point alone
  CHECK(indices(groups[1]) == std::vector<int>{0, 4});

  std::vector<core::Record> records;
  for (const auto& [key, r] : done) records.push_back(r);
  CHECK(count_pending_counters(records) == 3);
  CHECK(plan_counter_groups(points, {}, 32, 1).empty());
}

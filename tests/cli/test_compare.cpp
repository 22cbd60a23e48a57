// `attnprof compare` end to end: fixtures written with core::write_results, the real binary, its exit
// codes, stdout/stderr and output files.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "gate/gate_fixtures.hpp"
#include "file_text.hpp"

using namespace attnprof;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

using attnprof::test_support::slurp;

class Fixture {
 public:
  Fixture() {
    dir_ = fs::temp_directory_path() / ("attnprof_gate_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::mt19937_64 rng(31);
    const auto base_samples = test::latency_samples(rng, 30, 200.0, 0.01);
    const auto same_samples = test::latency_samples(rng, 30, 200.0, 0.01);
    const auto slow_samples = test::latency_samples(rng, 30, 220.0, 0.01);
    const auto other_samples = test::latency_samples(rng, 30, 80.0, 0.01);
    const auto other_same = test::latency_samples(rng, 30, 80.0, 0.01);

    auto results = [](std::vector<double> a, std::vector<double> b) {
      return test::make_results({test::make_record("fused", std::move(a), 1024),
                                 test::make_record("reference", std::move(b), 1024)});
    };
    core::write_results(results(base_samples, other_samples), path("base.json"));
    core::write_results(results(same_samples, other_same), path("same.json"));
    core::write_results(results(slow_samples, other_same), path("slow.json"));
    auto throttled = results(same_samples, other_same);
    throttled.records[0].clock.throttled_samples = 10;  // of 30: over a quarter
    core::write_results(throttled, path("throttled.json"));
    throttled.records[0].clock.throttled_samples = 3;   // a dip that cannot have decided the point
    core::write_results(throttled, path("dipped.json"));
    auto h100 = results(same_samples, other_same);
    h100.context.device.name = "NVIDIA H100 80GB HBM3";
    core::write_results(h100, path("h100.json"));

    nlohmann::json future = nlohmann::json::parse(slurp(path("same.json")));
    future["schema_version"] = "2.0";
    std::ofstream(path("future.json")) << future.dump();
    std::ofstream(path("garbage.json")) << "{ not json";
    // Finite samples whose ratio is not: the smallest positive double against nearly the largest.
    auto tiny = results(std::vector<double>(30, 5e-324), other_same);
    core::write_results(tiny, path("tiny.json"));
    auto huge = results(std::vector<double>(30, 1e308), other_same);
    core::write_results(huge, path("huge.json"));
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  Outcome run(const std::string& args) const {
    const std::string cmd = std::string("'") + ATTNPROF_BINARY_DIR "/attnprof' compare " + args + " >'" +
                            path("stdout.txt") + "' 2>'" + path("stderr.txt") + "'";
    const int status = std::system(cmd.c_str());
    Outcome o;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = slurp(path("stdout.txt"));
    o.err = slurp(path("stderr.txt"));
    return o;
  }

 private:
  fs::path dir_;
};

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

}  // namespace

TEST_CASE("attnprof compare: exit codes 0, 1, 2, 3 through the real binary") {
  REQUIRE(fs::exists(ATTNPROF_BINARY_DIR "/attnprof"));
  Fixture f;
  const std::string base = f.path("base.json");

  SECTION("A/A passes with 0 and writes every output file") {
    const auto r = f.run(base + " " + f.path("same.json") + " --md " + f.path("o.md") + " --junit " +
                         f.path("o.xml") + " --json " + f.path("o.json"));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("PASS") != std::string::npos);
    CHECK(r.out.find("geomean") != std::string::npos);
    CHECK(slurp(f.path("o.md")).find("PASS") != std::string::npos);
    CHECK(slurp(f.path("o.xml")).find("<testsuites") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(f.path("o.json")));
    CHECK(j["exit_code"] == 0);
    CHECK(j["points"].size() == 2);
  }
  SECTION("a 10% slower fused kernel fails with 1") {
    const auto r = f.run(base + " " + f.path("slow.json") + " --json " + f.path("o.json"));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("slower FAIL") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(f.path("o.json")));
    CHECK(j["points"][0]["verdict"] == "slower");
    CHECK(j["points"][1]["verdict"] == "same");
  }
  SECTION("--rerun-spec writes the slower shapes; --confirm with a clean re-run passes, a slow one fails") {
    auto r = f.run(base + " " + f.path("slow.json") + " --rerun-spec " + f.path("rerun.json"));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("--spec-file " + f.path("rerun.json") + " --kernels fused") != std::string::npos);
    const auto spec = nlohmann::json::parse(slurp(f.path("rerun.json")));
    REQUIRE(spec["shapes"].size() == 1);
    CHECK(spec["shapes"][0]["seq_q"] == 1024);
    CHECK(spec["shapes"][0]["dtype"] == "bf16");
    // The file is a valid sweep spec: the CPU backend measures it.
    const std::string sweep = std::string("'") + ATTNPROF_BINARY_DIR "/attnprof' sweep --backend cpu --spec-file '" +
                              f.path("rerun.json") + "' --kernels fused --no-counters --min-samples 3 --max-samples 3 --out '" +
                              f.path("rerun-out") + "' >/dev/null 2>&1";
    CHECK(std::system(sweep.c_str()) == 0);

    r = f.run(base + " " + f.path("slow.json") + " --confirm " + f.path("same.json"));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("unconfirmed") != std::string::npos);
    r = f.run(base + " " + f.path("slow.json") + " --confirm " + f.path("slow.json"));
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("confirmed by the re-run") != std::string::npos);
    r = f.run(base + " " + f.path("same.json") + " --rerun-spec " + f.path("none.json"));
    CHECK(r.exit_code == 0);
    CHECK(slurp(f.path("none.json")) == "{}\n");
    r = f.run(base + " " + f.path("slow.json") + " --confirm " + f.path("garbage.json"));
    CHECK(r.exit_code == 2);
  }
  SECTION("a per-kernel threshold of 15% lets it pass") {
    // Before the positionals: the option takes one value per occurrence and leaves the files alone.
    const auto r = f.run("--kernel-threshold fused=0.15,reference=0.2 " + base + " " + f.path("slow.json"));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("throttled candidate is inconclusive: 3") {
    const auto r = f.run(base + " " + f.path("throttled.json"));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.out.find("INCONCLUSIVE") != std::string::npos);
  }
  SECTION("a candidate throttled in 3 of 30 samples, the same without them, passes: 0") {
    const auto r = f.run(base + " " + f.path("dipped.json"));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("another GPU model is refused with 2 and one line, unless allowed") {
    auto r = f.run(base + " " + f.path("h100.json"));
    CHECK(r.exit_code == 2);
    CHECK(one_line(r.err));
    CHECK(r.err.find("--allow-device-mismatch") != std::string::npos);
    r = f.run(base + " " + f.path("h100.json") + " --allow-device-mismatch");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("DEVICE MISMATCH ALLOWED") != std::string::npos);
  }
  SECTION("bad input is 2 with a one-line message naming it") {
    auto r = f.run(base + " " + f.path("future.json"));
    CHECK(r.exit_code == 2);
    CHECK(one_line(r.err));
    CHECK(r.err.find("2.0") != std::string::npos);
    r = f.run(base + " " + f.path("does_not_exist.json"));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("does_not_exist.json") != std::string::npos);
    r = f.run(base + " " + f.path("garbage.json"));
    CHECK(r.exit_code == 2);
    r = f.run(base + " " + f.path("same.json") + " --kernel-threshold fused=lots");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("'lots'") != std::string::npos);
    r = f.run(base + " " + f.path("same.json") + " --counter-threshold l2=0.1");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("'l2'") != std::string::npos);
    r = f.run(base);
    CHECK(r.exit_code == 2);
  }
  SECTION("samples too far apart for their ratio to be a number: 2 and one line, not an internal error") {
    const auto r = f.run(f.path("tiny.json") + " " + f.path("huge.json"));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(one_line(r.err));
    CHECK(r.err.find("too far apart") != std::string::npos);
    CHECK(r.err.find("internal error") == std::string::npos);
  }
}

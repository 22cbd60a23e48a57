// core::write_file and AppendFile, the readers' limits, the output collision check and core::escape.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/results.hpp"
#include "core/sweep_spec.hpp"
#include "file_text.hpp"

using namespace attnprof;
using namespace attnprof::core;
namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path dir;
  Scratch() {
    std::string tmpl = (fs::temp_directory_path() / "attnprof-files.XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir), {})); }
};

using attnprof::test_support::slurp;

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST_CASE("write_file replaces a file whole and leaves no temporary behind") {
  Scratch s;
  spit(s / "a.md", "old");
  write_file(s / "a.md", "new text\n");
  CHECK(slurp(s / "a.md") == "new text\n");
  CHECK(s.entries() == 1);
}

// The devices are reached through links in the scratch folder: a writer that wrongly renamed onto
// its target would then replace the link, never the machine's /dev/full or /dev/null.
TEST_CASE("write_file failures are EnvironmentErrors naming the file, and nothing is left behind") {
  Scratch s;
  fs::create_symlink("/dev/full", s / "full");
  fs::create_symlink("/dev/null", s / "null");
  CHECK_THROWS_WITH(write_file(s / "full", "x"), Catch::Contains("/dev/full'") && Catch::Contains("No space left"));
  CHECK_THROWS_AS(write_file(s / "no/such/dir/a.md", "x"), EnvironmentError);
  fs::create_directory(s / "folder");
  CHECK_THROWS_AS(write_file(s / "folder", "x"), InputError);
  write_file(s / "null", "written in place");  // a device is written, not renamed onto
  CHECK(fs::is_symlink(s / "full"));
  CHECK(fs::is_symlink(s / "null"));
  CHECK(s.entries() == 3);
}

TEST_CASE("AppendFile appends each text whole after what write_file wrote") {
  Scratch s;
  write_file(s / "j.jsonl", "header\n");
  {
    AppendFile file(s / "j.jsonl");
    file.append("one\n");
    file.append("two\n");
    CHECK(file.path() == s / "j.jsonl");
  }
  CHECK(slurp(s / "j.jsonl") == "header\none\ntwo\n");
  CHECK_THROWS_AS(AppendFile(s / "missing.jsonl"), EnvironmentError);
  fs::create_symlink("/dev/full", s / "full");
  AppendFile full(s / "full");
  CHECK_THROWS_WITH(full.append("x"), Catch::Contains("full'") && Catch::Contains("No space left"));
}

TEST_CASE("write_file through a symbolic link replaces the link's target") {
  Scratch s;
  spit(s / "target.md", "old");
  fs::create_symlink(s / "target.md", s / "link.md");
  write_file(s / "link.md", "new");
  CHECK(fs::is_symlink(s / "link.md"));
  CHECK(slurp(s / "target.md") == "new");
}

TEST_CASE("read_file refuses folders, missing files and files over the limit") {
  Scratch s;
  CHECK_THROWS_WITH(read_file(s.dir.string(), "sweep file", 100), Catch::Contains("is a folder"));
  CHECK_THROWS_AS(read_file(s / "missing", "sweep file", 100), InputError);
  CHECK_THROWS_WITH(read_file("/dev/zero", "sweep file", 1 << 20), Catch::Contains("larger than"));
  spit(s / "ok", std::string(100, 'a'));
  CHECK(read_file(s / "ok", "f", 100).size() == 100);
  CHECK_THROWS_AS(read_file(s / "ok", "f", 99), InputError);
}

TEST_CASE("parse_json refuses nesting beyond the limit before building it") {
  const auto nested = [](int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); };
  CHECK_NOTHROW(parse_json(nested(kMaxJsonDepth)));
  CHECK_THROWS_WITH(parse_json(nested(kMaxJsonDepth + 1)), Catch::Contains("nested deeper"));
  CHECK_THROWS_AS(parse_json(nested(100000)), InputError);
  std::istringstream in(nested(100000));
  CHECK_THROWS_AS(parse_json(in), InputError);
}

TEST_CASE("dump_json writes bytes that are not UTF-8 as U+FFFD instead of throwing") {
  const nlohmann::json j = {{"command_line", std::string("attnprof sweep --out /tmp/x_\xff")}};
  CHECK_THROWS(j.dump());
  CHECK(dump_json(j) == "{\"command_line\":\"attnprof sweep --out /tmp/x_\xEF\xBF\xBD\"}");
}

TEST_CASE("check_distinct_paths: an output naming an input or another output is refused") {
  Scratch s;
  spit(s / "x.json", "{}");
  CHECK_THROWS_WITH(check_distinct_paths({{"results", s / "x.json"}}, {{"--html", s / "x.json"}}),
                    Catch::Contains("--html") && Catch::Contains("same file as the input"));
  CHECK_THROWS_AS(check_distinct_paths({{"results", s / "x.json"}}, {{"--md", s / "sub/../x.json"}}), InputError);
  fs::create_symlink(s / "x.json", s / "link.json");
  CHECK_THROWS_AS(check_distinct_paths({{"results", s / "link.json"}}, {{"--csv", s / "x.json"}}), InputError);
  fs::create_hard_link(s / "x.json", s / "hard.json");
  CHECK_THROWS_AS(check_distinct_paths({{"results", s / "hard.json"}}, {{"--csv", s / "x.json"}}), InputError);
  CHECK_THROWS_WITH(check_distinct_paths({}, {{"--md", s / "new.md"}, {"--junit", s / "new.md"}}),
                    Catch::Contains("same file as the output"));
  CHECK_NOTHROW(check_distinct_paths({{"results", s / "x.json"}}, {{"--md", s / "a.md"}, {"--csv", ""}, {"--html", ""}}));
  fs::create_symlink("/dev/null", s / "null");
  CHECK_NOTHROW(check_distinct_paths({}, {{"--md", s / "null"}, {"--csv", s / "null"}}));
}

TEST_CASE("escape::one_line makes control characters, ESC and broken UTF-8 visible") {
  CHECK(escape::one_line("a\nb\r\tc") == "a\\nb\\r\\tc");
  CHECK(escape::one_line("\x1b[31mred") == "\\x1b[31mred");
  CHECK(escape::one_line("x_\xff") == "x_\\xff");
  CHECK(escape::one_line("\xC2\x9B" "2J") == "\\u009b2J");   // C1 CSI
  CHECK(escape::one_line("caf\xC3\xA9 \xE2\x9C\x93") == "caf\xC3\xA9 \xE2\x9C\x93");  // valid UTF-8 kept
  CHECK(escape::one_line("\xED\xA0\x80") == "\\xed\\xa0\\x80");  // a surrogate is not UTF-8
}

TEST_CASE("escape::markdown neutralises HTML and table syntax") {
  CHECK(escape::markdown("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
  CHECK(escape::markdown("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;");
  CHECK(escape::markdown("a|b\nc") == "a\\|b c");
  CHECK(escape::markdown("\x1b[2J") == "\\[2J");
}

TEST_CASE("escape::csv_formula_guard: formulas prefixed, numbers kept") {
  CHECK(escape::csv_formula_guard("=HYPERLINK(\"x\")") == "'=HYPERLINK(\"x\")");
  CHECK(escape::csv_formula_guard("+1+2") == "'+1+2");
  CHECK(escape::csv_formula_guard("-2+3") == "'-2+3");
  CHECK(escape::csv_formula_guard("@SUM(A1)") == "'@SUM(A1)");
  CHECK(escape::csv_formula_guard("\tx") == "'\tx");
  CHECK(escape::csv_formula_guard("-1.5") == "-1.5");
  CHECK(escape::csv_formula_guard("-inf") == "-inf");
  CHECK(escape::csv_formula_guard("-1e-3") == "-1e-3");
  CHECK(escape::csv_formula_guard("fused") == "fused");
  CHECK(escape::csv_formula_guard("") == "");
}

TEST_CASE("escape::valid_utf8 replaces broken bytes for XML") {
  CHECK(escape::valid_utf8("a\xff" "b") == "a\xEF\xBF\xBD" "b");
  CHECK(escape::valid_utf8("\xC3\xA9") == "\xC3\xA9");
}

TEST_CASE("read_results: hostile files are InputErrors") {
  Scratch s;
  const std::string good_record =
      R"({"shape":{"batch":1,"heads":1,"seq_q":4,"seq_k":4,"hdim":8,"causal":false,"dtype":"bf16"},"kernel":"k","status":"ok")";
  const auto file = [&](const std::string& version, const std::string& record_tail) {
    spit(s / "r.json", R"({"schema_version":")" + version + R"(","context":{},"records":[)" + good_record + record_tail + "}]}");
    return s / "r.json";
  };
  CHECK_NOTHROW(read_results(file("1.3", "")));
  CHECK_THROWS_WITH(read_results(file("4294967297.0", "")), Catch::Contains("malformed schema_version"));
  CHECK_THROWS_WITH(read_results(file("1.3junk", "")), Catch::Contains("malformed schema_version"));
  CHECK_THROWS_WITH(read_results(file("1.3", R"(,"samples_us":[1,-2])")), Catch::Contains("negative"));
  CHECK_THROWS_WITH(read_results(file("1.3", R"(,"latency":{"n":1e30})")), Catch::Contains("not an integer in range"));
  CHECK_THROWS_WITH(read_results(file("1.3", R"(,"latency":{"n":18446744073709551616})")),
                    Catch::Contains("not an integer in range"));
  CHECK_THROWS_WITH(read_results(file("1.3", R"(,"device_id":4294967296)")), Catch::Contains("not an integer in range"));
  CHECK_THROWS_WITH(read_results(file("1.3", R"(,"samples_us":7)")), Catch::Contains("not an array"));
  // A shape size out of int64's range (found by fuzz_results under UBSan: an undefined cast before).
  spit(s / "r.json", R"({"schema_version":"1.3","context":{},"records":[{"shape":{"batch":1e308,"heads":1,)"
                     R"("seq_q":4,"hdim":8,"dtype":"bf16"},"kernel":"k","status":"ok"}]})");
  CHECK_THROWS_WITH(read_results(s / "r.json"), Catch::Contains("'batch'") && Catch::Contains("not an integer in range"));
  std::string many = ",\"samples_us\":[1";
  for (int64_t i = 0; i < kMaxSamplesPerPoint; ++i) many += ",1";
  CHECK_THROWS_WITH(read_results(file("1.3", many + "]")), Catch::Contains("at most"));
  CHECK_THROWS_WITH(read_results(s.dir.string()), Catch::Contains("is a folder"));
}

TEST_CASE("load_sweep_file: types, keys, size and depth are checked") {
  Scratch s;
  const auto spec = [&](const std::string& text) {
    spit(s / "spec.json", text);
    return s / "spec.json";
  };
  CHECK(load_sweep_file(spec(R"({"shapes":[{"seq":64,"causal":1,"dtype":"fp16"}]})")).shapes.size() == 1);
  CHECK_THROWS_WITH(load_sweep_file(spec(R"({"shapes":[{"seq":"128"}]})")), Catch::Contains("is not an integer"));
  CHECK_THROWS_WITH(load_sweep_file(spec(R"({"shapes":[{"seq":16,"seq=16,hdim":32}]})")),
                    Catch::Contains("is not an axis name"));
  CHECK_THROWS_WITH(load_sweep_file(spec(R"({"shapes":[{"seq":16,"dtype":"bf16,hdim=8"}]})")),
                    Catch::Contains("is not a dtype name"));
  CHECK_THROWS_WITH(load_sweep_file(spec(R"({"shapes":[{"seq":16,"causal":"1"}]})")), Catch::Contains("boolean"));
  CHECK_THROWS_WITH(load_sweep_file(spec("{\"shapes\":" + std::string(50000, '[') + std::string(50000, ']') + "}")),
                    Catch::Contains("nested deeper"));
  CHECK_THROWS_WITH(load_sweep_file("/dev/zero"), Catch::Contains("larger than"));
  CHECK_THROWS_WITH(load_sweep_file(s.dir.string()), Catch::Contains("is a folder"));
}

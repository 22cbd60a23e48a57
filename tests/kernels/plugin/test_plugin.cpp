// kernels/plugin/plugin.hpp: a PluginInfo (the results' context.plugins entry) written as before and
// read back. Loading plugins is tested end to end in tests/plugins.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "kernels/plugin/plugin.hpp"

using namespace attnprof;
using nlohmann::json;

TEST_CASE("PluginInfo: the results' context.plugins entry, written and read back") {
  const kernels::PluginInfo p{"/opt/libmine.so", "mine", "1.2", std::string(64, 'a'), 1, {"mine_fwd", "mine_bwd"}};
  const json j = p;
  CHECK(j.dump() == R"({"abi_version":1,"kernels":["mine_fwd","mine_bwd"],"name":"mine","path":"/opt/libmine.so",)"
                    R"("sha256":")" + std::string(64, 'a') + R"(","version":"1.2"})");
  const auto back = j.get<kernels::PluginInfo>();
  CHECK(back.path == p.path);
  CHECK(back.name == p.name);
  CHECK(back.version == p.version);
  CHECK(back.sha256 == p.sha256);
  CHECK(back.abi_version == 1);
  CHECK(back.kernels == p.kernels);
}

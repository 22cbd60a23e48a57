#include "measure/ceilings_cache.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/files.hpp"

namespace attnprof::measure {

namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

fs::path file_for(const std::string& key) { return fs::path(ceilings_cache_dir()) / (key + ".json"); }

}  // namespace

std::string ceilings_cache_dir() {
  if (auto dir = env_or_empty("ATTNPROF_CACHE_DIR"); !dir.empty()) return dir;
  if (auto xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty()) return (fs::path(xdg) / "attnprof").string();
  if (auto home = env_or_empty("HOME"); !home.empty())
    return (fs::path(home) / ".cache" / "attnprof").string();
  return {};
}

std::string device_cache_key(std::string_view device_name) {
  std::string key;
  bool pending_dash = false;
  for (char c : device_name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      if (pending_dash && !key.empty()) key += '-';
      pending_dash = false;
      key += static_cast<char>(std::tolower(u));
    } else {
      pending_dash = true;
    }
  }
  return key.empty() ? std::string("device") : key;
}

std::optional<core::Ceilings> load_ceilings(const std::string& key) {
  if (ceilings_cache_dir().empty()) return std::nullopt;
  std::ifstream in(file_for(key));
  if (!in) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(in);
    if (j.value("format", 0) != kCeilingsCacheFormat || j.value("key", std::string()) != key)
      return std::nullopt;
    auto c = j.at("ceilings").get<core::Ceilings>();
    // A cached ceiling of zero or less is useless for a roofline: treat the file as corrupt.
    if (!(c.peak_bw_bytes_per_s > 0) || c.peak_flops_per_s.empty()) return std::nullopt;
    for (const auto& [dtype, flops] : c.peak_flops_per_s)
      if (!(flops > 0)) return std::nullopt;
    return c;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool save_ceilings(const std::string& key, const core::Ceilings& c) {
  const std::string dir = ceilings_cache_dir();
  if (dir.empty()) return false;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return false;
  const fs::path target = file_for(key);
  try {
    core::write_file(target.string(),
                     core::dump_json(nlohmann::json{{"format", kCeilingsCacheFormat}, {"key", key}, {"ceilings", c}}, 2) + '\n');
  } catch (const std::exception&) {
    return false;  // a cache: not being able to save it costs a re-measurement next time, nothing more
  }
  return true;
}

}  // namespace attnprof::measure

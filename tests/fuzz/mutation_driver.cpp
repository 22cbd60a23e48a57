// Stands in for libFuzzer where the compiler has none (g++): runs a fuzz target on every seed file,
// then on deterministic mutations of them - byte flips, insertions and deletions, repeated
// structure, splices of grammar tokens - so the same inputs run on every machine.
// Usage: <target> [-runs=N] [-max_total_time=S] [-seed=K] SEED_DIR...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// Tokens of the three grammars (sweep axes, JSON, results fields) and known-hostile values.
const std::vector<std::string> kTokens = {
    "[", "]", "{", "}", "\"", ",", ":", ";", "|", "=", "x2", "+1", "-1", "0", "1e999", "-1e999", "nan",
    "inf", "\"nan\"", "\"-inf\"", "9223372036854775808", "18446744073709551616", "4294967297", "1e30",
    "null", "true", "\\u0000", "\\ud800", "\xff", "\x1b[2J", "<script>", "seq=", "hdim=", "tokens=", "dim=",
    "kv_heads=", "causal=", "dtype=bf16", "\"shapes\"", "\"axes\"", "\"preset\"", "\"samples_us\"",
    "\"schema_version\"", "\"records\"", "\"context\"", "\"status\"", "\"ok\"", "\"diagnosis\"", "\"n\""};

std::string mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string s = seed;
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (!s.empty()) s[pos % s.size()] = static_cast<char>(s[pos % s.size()] ^ (1 << (rng() % 8)));
        break;
      case 1:  // a random byte
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(pos), static_cast<char>(rng() % 256));
        break;
      case 2: {  // delete a run
        if (s.empty()) break;
        const size_t at = pos % s.size();
        s.erase(at, 1 + rng() % std::min<size_t>(16, s.size() - at));
        break;
      }
      case 3:  // a token
        s.insert(pos, kTokens[rng() % kTokens.size()]);
        break;
      case 4: {  // repeat a slice (deep nesting, long lists)
        if (s.empty()) break;
        const size_t at = pos % s.size();
        const std::string slice = s.substr(at, 1 + rng() % std::min<size_t>(8, s.size() - at));
        const size_t times = 1 + rng() % 200;
        std::string rep;
        for (size_t i = 0; i < times; ++i) rep += slice;
        s.insert(at, rep);
        break;
      }
      default: {  // replace a digit run with a hostile number
        const size_t at = s.find_first_of("0123456789", pos % (s.size() + 1));
        if (at == std::string::npos) break;
        const size_t end = s.find_first_not_of("0123456789.", at);
        static const char* kNumbers[] = {"-1", "0", "1e308", "1e999", "9223372036854775808", "-0.0", "2147483648"};
        s.replace(at, (end == std::string::npos ? s.size() : end) - at, kNumbers[rng() % 7]);
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 20000;
  double max_seconds = 0;
  uint64_t seed = 1;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("-runs=", 0) == 0) runs = std::stol(a.substr(6));
    else if (a.rfind("-max_total_time=", 0) == 0) max_seconds = std::stod(a.substr(16));
    else if (a.rfind("-seed=", 0) == 0) seed = std::stoull(a.substr(6));
    else if (a.rfind("-", 0) == 0) continue;  // other libFuzzer flags mean nothing here
    else
      for (const auto& entry : std::filesystem::directory_iterator(a)) {
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        seeds.push_back(text.str());
      }
  }
  if (seeds.empty()) seeds.push_back("");
  const auto run_one = [](const std::string& s) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  for (const auto& s : seeds) run_one(s);
  std::mt19937_64 rng(seed);
  const auto start = std::chrono::steady_clock::now();
  long done = 0;
  for (; done < runs; ++done) {
    if (max_seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > max_seconds)
      break;
    run_one(mutate(seeds[rng() % seeds.size()], rng));
  }
  std::printf("mutation driver: %zu seeds, %ld mutated inputs, no crash\n", seeds.size(), done);
  return 0;
}

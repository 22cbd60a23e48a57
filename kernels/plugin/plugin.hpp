// Plugin kernels: shared libraries built against include/attnprof/plugin.h, loaded at run time.
// load_plugin() opens one, checks its ABI version (1 to ATTNPROF_PLUGIN_ABI_VERSION) and struct sizes,
// validates every field of its kernel table (the flags against its ABI version), and registers each
// kernel in the registry (kernels/registry.hpp) behind the same Kernel interface as the built-in ones,
// so that the measurement, the reports and the gate never know the difference. Every bad plugin is an
// InputError (exit 2) with one line naming the file.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnprof::kernels {

// What the results' context records of a loaded plugin, so a gate knows what it measured.
struct PluginInfo {
  std::string path;     // absolute
  std::string name;     // the plugin's own name
  std::string version;  // the plugin's own version string
  std::string sha256;   // of the file's bytes
  int abi_version = 0;
  std::vector<std::string> kernels;
};
// Every field required on read (the results' context.plugins, written by sweep and merge).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PluginInfo, path, name, version, sha256, abi_version, kernels)

// Loads `path` and registers its kernels; throws InputError for every defect listed in
// docs/plugins.md ("Errors"). A plugin stays loaded for the life of the process. Plugin code runs
// here (its constructors, its entry point): attnprof calls this only in a child process, the plugin
// probe (src/run/plugin_probe.hpp) and the workers, never in the process that owns the results.
// With `expected_sha256`, the file's bytes are hashed before anything of it is loaded, and a file
// whose hash differs is not loaded: PluginChanged is thrown instead.
PluginInfo load_plugin(const std::string& path, const std::string& expected_sha256 = "");

// A pinned plugin whose file no longer holds the bytes the sweep started with (it was rebuilt).
struct PluginChanged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the process that owns the results knows of a plugin kernel: data from the probe, not code.
struct PluginKernelInfo {
  std::string name;
  std::string backend;  // "cpu" or "cuda"
  std::string description;
  std::string origin;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PluginKernelInfo, name, backend, description, origin)

// The info of a registered kernel (a loaded plugin's), as the probe sends it.
PluginKernelInfo info_of(std::string_view kernel_name);
// Registers a kernel known only by its info: it lists, plans and names its points like any other
// kernel, and throws std::logic_error if asked to support, plan or run a shape (workers do that).
// InputError when the name is already taken.
void register_described(const PluginKernelInfo& info);

// Kernels of attnprof's Python bridge (docs/python.md): torch:BACKEND and py:MODULE:FUNCTION.
bool is_python_kernel(const std::string& name);
// Where the bridge is: `given` if not empty, else $ATTNPROF_PYTHON_BRIDGE, else python/attnprof_python.so
// beside this executable, else ../lib/attnprof/attnprof_python.so from it. Throws InputError when none
// exists, saying how to build it.
std::string find_python_bridge(const std::string& given);
// Before the bridge is loaded (here and in every worker): which py: kernels its table holds and on
// which backend ("cuda" or "cpu"), through the environment the workers inherit.
void configure_python_bridge(const std::vector<std::string>& kernel_names, const std::string& backend);

}  // namespace attnprof::kernels

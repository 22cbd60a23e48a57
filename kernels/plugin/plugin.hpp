// Plugin kernels: shared libraries built against include/attnprof/plugin.h, loaded at run time.
// load_plugin() opens one, checks its ABI version (1 or 2) and struct sizes, validates every field of
// its kernel table (the flags against its ABI version), and registers each kernel in the registry
// (kernels/registry.hpp) behind the same Kernel interface as the built-in ones, so that the
// measurement, the reports and the gate never know the difference. Every bad plugin is an InputError (exit 2) with one line naming the file.
#pragma once
#include <string>
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
// docs/plugins.md ("Errors"). A plugin stays loaded for the life of the process.
PluginInfo load_plugin(const std::string& path);
// Loads each path in order (the order of --plugin options).
std::vector<PluginInfo> load_plugins(const std::vector<std::string>& paths);

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

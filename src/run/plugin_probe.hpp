// The plugin probe: a user's plugin is opened and interrogated (its constructors, its entry point, its
// table, and for `attnprof kernels` its supports() over the probe grid) only in a child process with a
// time limit, `attnprof sweep --plugin-probe`, never in the process that owns the results. The parent
// receives the tables as data. Whatever the plugin does there (a signal, a hang, an exception,
// exit(), output on stdout) is one line and exit 2 in the parent (docs/plugins.md, "Errors").
//
// Protocol (one JSON object per line). Parent -> probe (stdin): {"plugins": [PATH_HEX, ...],
// "catalogue": true}. Probe -> parent (its stdout; the probe points its own fd 1 at stderr before
// any plugin code runs, so a plugin's prints cannot corrupt it):
//   {"step": "loading plugin '/p/my.so'"}          before each step that runs plugin code
//   {"error": "one line"}                           a defect the loader found (InputError's text)
//   {"plugins": [...], "kernels": [...], "catalogue": [...]}   the answer
//
// A sweep pins what the probe hashed: each worker hashes the file again before loading it and loads
// it only when the bytes are the same (kernels::load_plugin's expected_sha256); a plugin rebuilt at
// its path during the sweep fails its later points, and results.json names the hash that was measured.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/catalogue.hpp"
#include "kernels/plugin/plugin.hpp"

namespace attnprof::run {

// How long the probe may take to load every plugin and answer (importing torch for the Python
// bridge takes seconds; a plugin that hangs is killed at this). --plugin-timeout.
inline constexpr double kDefaultPluginTimeoutS = 120;

// A plugin as a sweep pinned it. In the protocol, the path travels as hex: a path is bytes and may
// hold bytes that are not UTF-8, which JSON cannot carry.
struct PinnedPlugin {
  std::string path;    // absolute, as the file system takes it
  std::string sha256;  // of the bytes the probe loaded
  std::vector<std::string> kernels;
};
void to_json(nlohmann::json&, const PinnedPlugin&);
void from_json(const nlohmann::json&, PinnedPlugin&);

struct PluginProbe {
  std::vector<kernels::PluginInfo> plugins;        // in the order given; path as the file system takes it
  std::vector<kernels::PluginKernelInfo> kernels;  // every plugin kernel, plugin by plugin
  std::vector<kernels::CatalogueEntry> catalogue;  // of the plugin kernels, when asked for
  std::vector<PinnedPlugin> pinned() const;
};

// Loads `paths` in a probe process (`exe`, empty: this binary) and returns what they hold. InputError
// (exit 2), one line, for every way a plugin can fail there, including a probe that dies, hangs past
// `timeout_s`, exits or answers nothing readable. Nothing when `paths` is empty.
PluginProbe probe_plugins(const std::vector<std::string>& paths, bool with_catalogue, double timeout_s,
                          const std::string& exe = "");

// The probe process's whole life (`attnprof sweep --plugin-probe`); returns its exit code.
int plugin_probe_main();

}  // namespace attnprof::run

// From results to every output, one path: analyse(results) once, then render_all(results, outputs).
// `attnprof sweep` and `attnprof report` both take it. Renderers: one per format, each behind the one
// interface below, each in its own file, each reading only core::Results as analyse left them and
// showing the same data (every point, its latency, throughput, roofline position and diagnosis; the
// reference-vs-fused comparison, core::compare_kernels; the points that did not run ok with their
// reason). A renderer computes no diagnosis: a measured record without one (results never analysed)
// shows its timings and "-" for the rest. Formats: docs/report.md. Golden outputs of every format:
// tests/report/golden/. The outputs of the other commands (explain, calibrate, devices) are in
// report/outputs.hpp; those of compare and history in gate/render.hpp and gate/history.hpp (gate and
// report are peers: neither reads the other's model).
#pragma once
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/files.hpp"
#include "core/results.hpp"

namespace attnprof::report {

// One output format.
class Renderer {
 public:
  virtual ~Renderer() = default;
  // The format's name: "terminal", "markdown", "csv", "html", "openmetrics".
  virtual std::string_view format() const = 0;
  virtual void render(const core::Results&, std::ostream&) const = 0;
};

// Every renderer, in this order:
// - terminal: fixed-width table: point, kernel, status, p50/p99 us, TFLOP/s, % of roof, verdict; then
//   the comparison and the reasons of points that did not run ok.
// - markdown: GitHub-flavoured Markdown that fits a CI job summary: context, table, comparison, failures.
// - csv: RFC 4180 CSV (CRLF line ends), one row per point, every key number and one column per counter.
// - html: one self-contained HTML file (no network): context, roofline and sweep charts, sortable
//   table, drill-down per point, comparison, failures.
// - openmetrics: OpenMetrics text (what Prometheus scrapes): TFLOP/s, P50/P99, DRAM bytes against the
//   minimum, % of roof, verdict and status per point, labelled by kernel, shape, device, backend and
//   revision.
const std::vector<const Renderer*>& renderers();
// The renderer of `format`; std::out_of_range for a name renderers() does not hold.
const Renderer& renderer(std::string_view format);
// What `renderer` writes for `results`, as a string.
std::string render(const Renderer&, const core::Results&);

// One file to write: a format, the option that asked for it ("--html", for messages) and the path.
struct Output {
  std::string format;
  std::string option;
  std::string path;
};
// The outputs as NamedPaths, for core::check_distinct_paths before any work.
std::vector<core::NamedPath> named_paths(const std::vector<Output>&);
// Renders `results` in each output's format and writes it through core::write_file (atomic: a reader
// never sees a partial file). A missing parent folder is created (a sweep's) or fails the write
// (`attnprof report`'s). EnvironmentError when one cannot be written; the ones before it are written.
enum class MissingFolder { fail, create };
void write_outputs(const core::Results&, const std::vector<Output>&, MissingFolder = MissingFolder::fail);

// The analysis every output reads, done once per command before anything is rendered: the diagnosis
// of every measured point (core::annotate, replacing any stored one), which the renderers and
// core::compare_kernels read from Record::diagnosis.
void analyse(core::Results&);

// Everything one command renders: the files asked for and, unless null, the terminal table.
struct Outputs {
  std::vector<Output> files;
  MissingFolder missing_folder = MissingFolder::fail;
  std::ostream* terminal = nullptr;  // where the terminal table goes; null: nowhere (--quiet)
};
// Renders analysed results to every output: each file (write_outputs), then the terminal table.
// EnvironmentError when a file cannot be written (the table is then not printed).
void render_all(const core::Results&, const Outputs&);

struct ReportOptions {
  std::string results_path;
  std::vector<Output> outputs;  // the files asked for (--html, --md, --csv, --openmetrics)
  bool quiet = false;           // no terminal table
};

// `attnprof report`: reads the results (InputError on a bad file), analyses them, writes each requested
// file (EnvironmentError when one cannot be written) and prints the terminal table to `out` unless
// quiet: analyse, then render_all. Returns the exit code (0).
int run_report(const ReportOptions&, std::ostream& out);

}  // namespace attnprof::report

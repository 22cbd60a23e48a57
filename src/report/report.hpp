// Renderers: one per format, each reading only core::Results and showing the same data (every point,
// its latency, throughput, roofline position and diagnosis; the reference-vs-fused comparison; the
// points that did not run ok with their reason). Records without a diagnosis are diagnosed on the fly
// (core::diagnose is pure), so a renderer never shows less than `attnprof report` would.
// Formats: docs/report.md.
#pragma once
#include <ostream>
#include <string>

#include "core/results.hpp"

namespace attnprof::report {

// Fixed-width table: point, kernel, status, p50/p99 us, TFLOP/s, % of roof, verdict; then the
// comparison and the reasons of points that did not run ok.
void write_terminal(const core::Results&, std::ostream&);
// GitHub-flavoured Markdown that fits a CI job summary: context, table, comparison, failures.
void write_markdown(const core::Results&, std::ostream&);
// RFC 4180 CSV (CRLF line ends), one row per point, every key number and one column per counter.
void write_csv(const core::Results&, std::ostream&);
// One self-contained HTML file (no network): context, roofline and sweep charts, sortable table,
// drill-down per point, comparison, failures.
void write_html(const core::Results&, std::ostream&);
// OpenMetrics text (what Prometheus scrapes): TFLOP/s, P50/P99, DRAM bytes against the minimum, % of
// roof, verdict and status per point, labelled by kernel, shape, device, backend and revision.
void write_openmetrics(const core::Results&, std::ostream&);

struct ReportOptions {
  std::string results_path;
  std::string html_path, markdown_path, csv_path, openmetrics_path;  // empty: not written
  bool quiet = false;                              // no terminal table
};

// `attnprof report`: reads the results (InputError on a bad file), annotates them with the
// diagnosis, prints the terminal table to `out` unless quiet, writes each requested file
// (EnvironmentError when one cannot be written). Returns the exit code (0).
int run_report(const ReportOptions&, std::ostream& out);

}  // namespace attnprof::report

// daqflow report DIR: a recording (daqflow run --record DIR) as one self-contained HTML page.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "daqflow/bench/run_report.hpp"

namespace daqflow::cli {

namespace {

struct ReportArgs {
  std::string dir;
  std::string output;
};

void report_command(const ReportArgs& args) {
  auto report = bench::render_run_report(args.dir);
  if (!report) fail("report", report.error().message());
  const std::string output = args.output.empty()
                                 ? (std::filesystem::path(args.dir) / "report.html").string()
                                 : args.output;
  std::ofstream out(output, std::ios::trunc);
  out << report->html;
  if (!out.flush()) fail("report", "cannot write " + output);
  std::printf(
      "report: %s (%zu samples of %zu applications%s)\n", output.c_str(), report->samples,
      report->applications,
      report->unreadable > 0
          ? (", " + std::to_string(report->unreadable) + " unreadable lines left out").c_str()
          : "");
}

}  // namespace

void add_report(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report", "Turn a recording (daqflow run --record DIR) into an HTML report with plots");
  cmd->add_option("dir", args->dir, "the recording's folder")->required();
  cmd->add_option("--output", args->output, "the report file (default: DIR/report.html)");
  cmd->callback([args] { report_command(*args); });
}

}  // namespace daqflow::cli

// daqflow convert FILE|DIR... --to dqf|hdf5|frd --out DIR: data files from one format into
// another, every event's bytes and CRC-32C kept (daqflow/apps/output/convert.hpp).
#include "daqflow/apps/output/convert.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace daqflow::cli {

namespace {

namespace fs = std::filesystem;

struct ConvertArgs {
  std::vector<std::string> paths;
  std::string to;
  std::string out;
  std::string compression = "none";
  int compression_level = 1;
};

// The data files named: files as given, directories by the data files in them (sorted).
std::vector<std::string> inputs(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.is_regular_file(ec) && apps::output::format_of(entry.path().string()))
        found.push_back(entry.path().string());
    }
    if (ec) fail("convert", path + ": " + ec.message());
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

void convert_command(const ConvertArgs& args) {
  auto to = apps::output::parse_data_format(args.to);
  if (!to) fail("convert", to.error().message());
  apps::output::Hdf5WriteOptions hdf5;
  if (args.compression == "gzip") hdf5.compression = apps::output::Hdf5Compression::gzip;
  hdf5.gzip_level = args.compression_level;
  std::error_code ec;
  fs::create_directories(args.out, ec);
  if (ec) fail("convert", "creating " + args.out + ": " + ec.message());
  const auto files = inputs(args.paths);
  if (files.empty()) fail("convert", "no data file (.dqf, .h5, .raw) in what was named");
  for (const auto& path : files) {
    auto written = apps::output::convert_data_file(path, *to, args.out, hdf5);
    if (!written) fail("convert", written.error().message());
    std::printf("%s -> %s\n", path.c_str(), written->c_str());
  }
}

}  // namespace

void add_convert(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  auto* cmd = app.add_subcommand(
      "convert",
      "Convert data files between daqflow's .dqf, HDF5 (.h5) and CMS FRD (.raw), every event's "
      "bytes and CRC-32C kept");
  cmd->add_option("paths", args->paths, "data files, or directories holding them")->required();
  cmd->add_option("--to", args->to, "the format written: dqf, hdf5 or frd")
      ->required()
      ->check(CLI::IsMember({"dqf", "hdf5", "frd"}));
  cmd->add_option("--out", args->out, "the directory the new files go to")->required();
  cmd->add_option("--compression", args->compression, "hdf5: none or gzip")
      ->check(CLI::IsMember({"none", "gzip"}))
      ->capture_default_str();
  cmd->add_option("--compression-level", args->compression_level, "hdf5: gzip's level")
      ->check(CLI::Range(1, 9))
      ->capture_default_str();
  cmd->callback([args] { convert_command(*args); });
}

}  // namespace daqflow::cli

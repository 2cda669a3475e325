// daqflow shm list|clean [--run TAG] [--all-dead]: the shared-memory segments of the shm
// transport in /dev/shm. A process that crashed leaves its segments behind; clean removes them.
//   list               every daqflow segment: kind, run, context, application, owner, state
//   clean --all-dead   removes the segments whose owner process is gone
//   clean --run TAG    removes every segment of that run (live owners included: stop it first)

#include "daqflow/transport/shm.hpp"

#include <cstdio>
#include <string>

#include "cli/commands.hpp"

namespace daqflow::cli {
namespace {

namespace shm = transport::shm;

struct ShmArgs {
  std::string run;
  bool all_dead = false;
};

bool selected(const shm::SegmentInfo& s, const ShmArgs& args) {
  if (!args.run.empty() && s.run_tag != args.run) return false;
  return true;
}

void list(const ShmArgs& args) {
  std::printf("%-56s %-8s %10s %-12s %-10s %-12s %8s %-6s %s\n", "SEGMENT", "KIND", "BYTES", "RUN",
              "CONTEXT", "APPLICATION", "PID", "OWNER", "STATE");
  for (const auto& s : shm::list_segments()) {
    if (!selected(s, args)) continue;
    if (!s.readable) {
      std::printf("%-56s %-8s %10zu (no daqflow header)\n", s.name.c_str(), "?", s.bytes);
      continue;
    }
    std::printf("%-56s %-8s %10zu %-12s %-10s %-12s %8d %-6s %s\n", s.name.c_str(), s.kind.c_str(),
                s.bytes, s.run_tag.c_str(), s.context.c_str(), s.application.c_str(),
                static_cast<int>(s.pid), s.owner_alive ? "alive" : "dead", s.state.c_str());
  }
}

void clean(const ShmArgs& args) {
  if (args.run.empty() && !args.all_dead) {
    std::fprintf(stderr, "daqflow shm clean: say which segments: --run TAG, --all-dead, or both\n");
    throw CLI::RuntimeError(2);
  }
  int removed = 0;
  int failed = 0;
  for (const auto& s : shm::list_segments()) {
    if (!selected(s, args)) continue;
    // An unreadable segment has no owner we could ask about: only a named run removes it.
    if (args.all_dead && (!s.readable || s.owner_alive)) continue;
    if (auto r = shm::remove_segment(s.name); !r) {
      std::fprintf(stderr, "daqflow shm clean: %s\n", r.error().message().c_str());
      ++failed;
      continue;
    }
    std::printf("removed /dev/shm/%s\n", s.name.c_str());
    ++removed;
  }
  std::printf("%d segment(s) removed\n", removed);
  if (failed > 0) throw CLI::RuntimeError(1);
}

}  // namespace

void add_shm(CLI::App& app) {
  auto args = std::make_shared<ShmArgs>();
  CLI::App* cmd = app.add_subcommand("shm", "list or remove the shm transport's segments");
  cmd->require_subcommand(1);
  CLI::App* ls = cmd->add_subcommand("list", "list daqflow shared-memory segments in /dev/shm");
  ls->add_option("--run", args->run, "only the segments of this run tag");
  ls->callback([args] { list(*args); });
  CLI::App* rm = cmd->add_subcommand("clean", "remove segments left by crashed processes");
  rm->add_option("--run", args->run, "the segments of this run tag (\"<run>.<port>\")");
  rm->add_flag("--all-dead", args->all_dead, "the segments whose owner process is gone");
  rm->callback([args] { clean(*args); });
}

}  // namespace daqflow::cli

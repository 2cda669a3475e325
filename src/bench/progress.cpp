#include "daqflow/bench/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

namespace daqflow::bench {

Progress::Progress(std::FILE* out) : Progress(out, ::isatty(::fileno(out)) == 1) {}

Progress::Progress(std::FILE* out, bool tty) : out_(out), tty_(tty) {}

Progress::~Progress() {
  finish();
}

void Progress::begin(int index, int total, const std::string& what) {
  step_ = fmt::format("[{}/{}] {}", index, total, what);
  update(step_);
}

void Progress::line(const std::string& text) {
  finish();
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (!open_) return;
  std::fprintf(out_, "\n");
  std::fflush(out_);
  open_ = false;
}

void Progress::note(const std::string& text) {
  // The run's steps (starting, configuring, enabling ...) only flicker past on a terminal; in a
  // log they would drown the figures.
  if (tty_) show(step_ + "  " + text);
}

void Progress::status(const control::StatusLine& line) {
  update(step_ + "  " + control::format_status_line(line));
}

void Progress::update(const std::string& text) {
  if (tty_) {
    show(text);
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
    std::fflush(out_);
  }
}

void Progress::show(const std::string& text) {
  // \033[K clears what a longer previous line left behind.
  std::fprintf(out_, "\r%s\033[K", text.c_str());
  std::fflush(out_);
  open_ = true;
}

}  // namespace daqflow::bench

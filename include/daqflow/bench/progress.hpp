#pragma once
// What `daqflow bench` shows while it runs: on a terminal, one line rewritten in place
// ("[3/8] stream 1to1 tcp 65536 B depth 8   2.0 s  1234.56 MB/s"); otherwise (a log, CI) one plain
// line per step and per status report. Used from one thread.

#include <cstdio>
#include <string>

#include "daqflow/control/run.hpp"

namespace daqflow::bench {

class Progress final : public control::RunReporter {
 public:
  // tty: rewrite one line; detected from the stream when not given.
  explicit Progress(std::FILE* out = stdout);
  Progress(std::FILE* out, bool tty);
  ~Progress() override;
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Starts step `index` (1-based) of `total`, described by `what`.
  void begin(int index, int total, const std::string& what);
  // A line that stays: ends the live line first.
  void line(const std::string& text);
  // Ends the live line (call before printing anything else).
  void finish();

  // control::RunReporter: notes are shown on the live line only; status lines update it.
  void note(const std::string& text) override;
  void status(const control::StatusLine& line) override;

  [[nodiscard]] bool tty() const { return tty_; }

 private:
  // The live line on a terminal; else a line of the log.
  void update(const std::string& text);
  void show(const std::string& text);

  std::FILE* out_;
  bool tty_;
  bool open_ = false;
  std::string step_;
};

}  // namespace daqflow::bench

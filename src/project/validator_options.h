// The validator's command-line options, written once: trainlock-validate's parser
// (validators/main.cc) builds its options from this table, `trainlock validate` names them in
// its help and uses the table to tell the validator's options (and which take a value) from its
// own when it forwards them, and shell completion offers them. A new option is a new row here.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

struct ValidatorOption {
  const char* names;    // CLI11's form: "--out,-o" (the long name first)
  const char* value;    // what the value is, for help ("FILE"); nullptr for a flag
  const char* help;     // one line
  const char* choices;  // "auto|cpu|cuda" when the value is one of these; "" otherwise
  long min = 0;         // for a count: the accepted range (min <= max); min > max: not a count
  long max = -1;
  bool list = false;  // takes a,b and repeats
  // `trainlock validate` finishes the report on the host with --image, so it reads these
  // itself (and still forwards them without --image).
  bool host_reads = false;

  bool is_flag() const { return value == nullptr; }
  bool is_count() const { return min <= max; }
  std::string_view long_name() const;               // "--out"
  std::vector<std::string_view> all_names() const;  // "--out", "-o"
  // Whether `arg` names this option: its long or short name, alone or as "--name=value".
  bool Names(std::string_view arg) const;
};

// Every option of trainlock-validate's default command, in help order.
std::span<const ValidatorOption> ValidatorOptions();

// The row `arg` names ("--out", "-o", "--out=x"); nullptr for none.
const ValidatorOption* FindValidatorOption(std::string_view arg);

// "--out FILE, --checkpoint-dir DIR, ..., -q, -v": the options as `trainlock validate --help`
// lists them.
std::string ValidatorOptionsSummary();

// The exit codes of a validation (docs/DESIGN.md, "Exit codes"), as trainlock-validate --help
// and `trainlock validate --help` both list them (several lines, the last without '\n').
std::string ValidateExitCodesHelp();

}  // namespace trainlock

// One terminal-escaping function for every string trainlock did not write: what a terminal
// would act on (escape sequences, carriage returns, backspaces, bidi overrides) is shown as
// text instead.
#include "base/terminal_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/json_file.h"

namespace trainlock {
namespace {

TEST(TerminalLine, CsiAndOscSequencesAreShownNotObeyed) {
  EXPECT_EQ(TerminalLine("\x1b[2J\x1b]0;title\x07"), "\\x1b[2J\\x1b]0;title\\x07");
}

TEST(TerminalLine, CarriageReturnBackspaceAndNewlineAreShown) {
  EXPECT_EQ(TerminalLine("ok\rFAIL\b\nx"), "ok\\x0dFAIL\\x08\\x0ax");
}

TEST(TerminalLine, BidiOverridesAndIsolatesAreShownAsCodePoints) {
  EXPECT_EQ(TerminalLine("a\xE2\x80\xAE"
                         "b\xE2\x81\xA6"
                         "c\xD8\x9C"
                         "d"),
            "a\\u202eb\\u2066c\\u061cd");
}

TEST(TerminalLine, C1ControlsAndInvalidUtf8BecomeReplacementCharacters) {
  EXPECT_EQ(TerminalLine("\xC2\x9B"
                         "x\xFF"),
            "\xEF\xBF\xBD"
            "x\xEF\xBF\xBD");
}

TEST(TerminalLine, PrintableUnicodeIsKept) {
  EXPECT_EQ(TerminalLine("NVIDIA H200 \xE2\x9C\x85 caf\xC3\xA9"),
            "NVIDIA H200 \xE2\x9C\x85 caf\xC3\xA9");
}

TEST(TerminalText, EscapesEachLineAndKeepsTheNewlinesBetweenThem) {
  EXPECT_EQ(TerminalText("one\x1b[31m\ntwo\n"), "one\\x1b[31m\ntwo\n");
}

}  // namespace
}  // namespace trainlock

namespace trainlock {
namespace {

TEST(EscapeJsonForTerminal, C1ControlsBidiAndLineSeparatorsBecomeJsonEscapes) {
  const std::string dumped = nlohmann::json{{"name", "a\u0085b\u202Ec\u2028d\u00e9"}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string out = EscapeJsonForTerminal(dumped);
  EXPECT_EQ(out, "{\"name\":\"a\\u0085b\\u202ec\\u2028d\u00e9\"}");
  // The same JSON: a reader decodes the same string.
  EXPECT_EQ(nlohmann::json::parse(out), nlohmann::json::parse(dumped));
}

TEST(DumpJsonOutput, InvalidUtf8IsReplacedNotThrown) {
  EXPECT_EQ(DumpJsonOutput(nlohmann::json{{"f", std::string("a\xff")}}, -1),
            "{\"f\":\"a\xEF\xBF\xBD\"}");
}

TEST(CleanText, BidiFormattingCharactersBecomeVisibleCodePoints) {
  EXPECT_EQ(CleanText("a\u202Eb\u2067c\u200Fd"), "a\\u202eb\\u2067c\\u200fd");
}

TEST(CleanText, CarriageReturnsBecomeNewlines) {
  EXPECT_EQ(CleanText("ok\rFAIL\r\nnext"), "ok\nFAIL\nnext");
}

}  // namespace
}  // namespace trainlock

// Escaping for each place a string from a file or the command line ends up. Such a string is bytes:
// a kernel or device name, a reason, a path may hold control characters, terminal escapes, markup or
// bytes that are not UTF-8. Each function makes it inert for one destination.
#pragma once
#include <string>
#include <string_view>

namespace attnprof::core::escape {

// Terminal and one-line messages (stderr, tables): control characters (C0, DEL, C1), including ESC,
// become visible escapes (\n, \t, \x1b, \u009b), and bytes that are not UTF-8 become \xff, so a name
// can neither break the line nor drive the terminal. Valid UTF-8 text passes unchanged.
std::string one_line(std::string_view);
inline std::string terminal(std::string_view s) { return one_line(s); }

// The text with every byte that does not start a valid UTF-8 sequence replaced by U+FFFD (for XML,
// which must be well-formed UTF-8).
std::string valid_utf8(std::string_view);

// XML 1.0 and HTML text and attribute values (the HTML report, the history page, JUnit): '&', '<',
// '>', '"' and '\'' become entities ("&#39;" for the apostrophe, which HTML 4 lacks a name for);
// characters XML 1.0 cannot carry (C0 controls other than tab, newline and carriage return) and bytes
// that are not UTF-8 become U+FFFD.
std::string xml(std::string_view);

// GitHub-flavoured Markdown (PR comments, job summaries), which renders inline HTML: '<', '>', '&'
// become entities, the table and emphasis characters are backslash-escaped, line breaks become
// spaces, other control characters are dropped.
std::string markdown(std::string_view);

// A CSV cell that a spreadsheet would run as a formula (it starts with '=', '+', '-', '@', a tab or a
// CR: OWASP "CSV injection") gets a leading "'". A plain number such as -1.5 or -inf is a number,
// left as it is. RFC 4180 quoting is the CSV writer's, after this.
std::string csv_formula_guard(std::string_view);

}  // namespace attnprof::core::escape

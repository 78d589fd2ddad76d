// How a corpus file is read (data.format, docs/data_formats.md): plain text, one document per line,
// or JSON Lines with a text field; "auto" chooses per file and says why. Files that are not text
// (Parquet, Arrow, llm.c token shards) are refused with what they are and how to convert them.
// Every file is untrusted: a bad line is an error naming the file and the line. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tw {

enum class CorpusFormat : uint8_t {
    kText = 0,   // paragraphs; documents cut at blank lines (one file of a folder is one document)
    kLines = 1,  // one document per non-empty line
    kJsonl = 2,  // one JSON object per non-blank line, its text field the document
};

// "text" | "lines" | "jsonl".
const char* format_name(CorpusFormat f);

// A file with no blank line and at least this many lines is read one document per line by "auto".
inline constexpr size_t kAutoLinesMinLines = 10;

struct FormatChoice {
    CorpusFormat format = CorpusFormat::kText;
    std::string why;  // for "auto": the evidence, e.g. "its 523 lines hold no blank line"; else "data.format"
};

// The format of the file at `path` with contents `bytes` under data.format `setting` ("auto",
// "text", "lines", "jsonl"); an explicit setting always wins. "auto": JSONL when the name ends in
// .jsonl or .json or the first non-blank line is a JSON object; else, for a single-file corpus
// (`single_file`), one document per line when no line is blank and there are at least
// kAutoLinesMinLines lines; else text.
FormatChoice choose_format(const std::string& path, std::string_view bytes, const std::string& setting, bool single_file);

// Ok for a file that may be text. Parquet ("PAR1"), Arrow/Feather ("ARROW1", or a .parquet, .arrow,
// .feather name) and llm.c shards (magic 20240520) are errors naming the file, what it is, and a
// command that converts it (pandas to JSON Lines) or the keys to use instead (data.train_shard).
Status refuse_binary_format(const std::string& path, std::string_view bytes);

// One document of a line-oriented file: its 1-based line number and text.
struct LineDocument {
    size_t line = 0;
    std::string text;
};

// "lines": every line that is not blank, without its line ending (a trailing "\r" is dropped too).
std::vector<LineDocument> split_lines(std::string_view bytes);

// "jsonl": each non-blank line must be a JSON object whose `field` is a string; that string is the
// document (empty strings are skipped). Errors name `path` and the line: "data.corpus F:7: not valid
// JSON (...)", "...: a JSON array, not an object (...)", "...: no \"text\" field (data.text_field;
// its fields: id, body)", "...: field \"text\" is a number, not a string".
Result<std::vector<LineDocument>> read_jsonl(const std::string& path, std::string_view bytes, const std::string& field);

}  // namespace tw

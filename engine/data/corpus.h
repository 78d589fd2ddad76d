// Raw corpora as documents: the Brown Corpus (tagged form C, POS tags stripped), plain text or JSON Lines.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tw {

struct Document {
    std::string name;   // "ca01" for Brown, relative path for text folders
    char genre = '?';   // Brown category letter a–r; '?' for plain text
    std::string text;   // plain text, paragraphs separated by '\n'
};

// Turns Brown "word/TAG word/TAG" lines back into plain text: tags dropped, `` and '' become
// quotes, no space before closing punctuation. Paragraphs (tab-indented in the source) become lines.
std::string detag_brown(const std::string& tagged);

// Reads the 500 Brown files (c[a-r]NN) from `dir`, sorted by name. Errors name the directory.
Result<std::vector<Document>> read_brown(const std::string& dir);

// How read_text_corpus reads its files (data.format, data.text_field; engine/data/corpus_format.h).
struct CorpusReadOptions {
    std::string format = "text";      // "auto" | "text" | "lines" | "jsonl"
    std::string text_field = "text";  // JSONL: the field that holds a document
    size_t doc_chars = 20000;         // text: a single file is cut into documents of about this many characters
};

// Reads a corpus file or every regular file under a folder (sorted), each in the format
// corpus_format.h chooses for it: text (a single file cut into documents of ~doc_chars characters
// at paragraph boundaries so a document split is possible; each file of a folder one document),
// lines (one document per non-empty line, named "FILE:LINE") or JSONL (one per object, "FILE:LINE").
// `reading`, when given, receives one line saying how the corpus was read and why, e.g.
// "data.corpus /d/a.txt: read as one document per line (data.format \"auto\": its 523 lines hold no
// blank line)". Errors start "data.corpus PATH: " and say why: no such path, an empty file or
// folder, a file that is not text (engine/data/text_check.h names the file and the offending byte),
// a Parquet/Arrow file or shard (with how to convert it), a bad JSONL line (file and line).
Result<std::vector<Document>> read_text_corpus(const std::string& path, const CorpusReadOptions& options = {},
                                               std::string* reading = nullptr);

}  // namespace tw

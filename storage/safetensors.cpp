// safetensors reading and writing; see safetensors.h for the format and the checks.
#include "storage/safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/little_endian.h"

namespace tw {
namespace {

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

uint64_t numel(const std::vector<int64_t>& shape) {
    uint64_t n = 1;
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    return n;
}

}  // namespace

const SafeTensor* SafeTensorsFile::find(const std::string& name) const {
    for (const SafeTensor& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

Status write_safetensors(const std::string& path, const SafeTensorsFile& f) {
    nlohmann::json h = nlohmann::json::object();
    uint64_t at = 0;
    for (const SafeTensor& t : f.tensors) {
        for (int64_t d : t.shape)
            if (d < 0) return Status::error(path + ": tensor " + t.name + " has a negative dimension");
        if (numel(t.shape) != t.values.size())
            return Status::error(path + ": tensor " + t.name + " holds " + std::to_string(t.values.size()) +
                                 " values for its shape");
        if (h.contains(t.name)) return Status::error(path + ": tensor " + t.name + " twice");
        const uint64_t bytes = t.values.size() * sizeof(float);
        h[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
        at += bytes;
    }
    if (!f.metadata.empty()) h["__metadata__"] = f.metadata;
    std::string header = h.dump();
    header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) return Status::error(path + ": cannot write " + tmp);
        uint8_t len[8];
        le::put_u64(len, header.size());
        out.write(reinterpret_cast<const char*>(len), 8);
        out.write(header.data(), static_cast<std::streamsize>(header.size()));
        std::vector<uint8_t> buf;
        for (const SafeTensor& t : f.tensors) {
            buf.resize(t.values.size() * sizeof(float));
            for (size_t i = 0; i < t.values.size(); ++i) le::put_f32(buf.data() + 4 * i, t.values[i]);
            out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
        }
        out.flush();
        if (!out) {
            std::error_code ec;
            std::filesystem::remove(tmp, ec);
            return Status::error(path + ": write failed (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) return Status::error(path + ": cannot rename " + tmp + ": " + ec.message());
    return Status::ok();
}

Result<SafeTensorsFile> read_safetensors(const std::string& path) {
    using R = Result<SafeTensorsFile>;
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return R::error(path + ": cannot read: " + ec.message());
    std::ifstream in(path, std::ios::binary);
    if (!in) return R::error(path + ": cannot open");
    uint8_t len[8];
    if (size < 8 || !in.read(reinterpret_cast<char*>(len), 8)) return R::error(path + ": not a safetensors file (shorter than 8 bytes)");
    const uint64_t n = le::get_u64(len);
    if (n > kMaxHeaderBytes || n > size - 8)
        return R::error(path + ": not a safetensors file (a header of " + std::to_string(n) + " bytes in a file of " +
                        std::to_string(size) + ")");
    std::string header(n, '\0');
    if (!in.read(header.data(), static_cast<std::streamsize>(n))) return R::error(path + ": cannot read its header");
    nlohmann::json h = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
    if (h.is_discarded() || !h.is_object()) return R::error(path + ": its header is not a JSON object");
    const uint64_t data_bytes = size - 8 - n;
    SafeTensorsFile f;
    struct Span {
        uint64_t begin, end;
        std::string name;
    };
    std::vector<Span> spans;
    for (auto& [name, e] : h.items()) {
        if (name == "__metadata__") {
            if (!e.is_object()) return R::error(path + ": __metadata__ is not an object");
            for (auto& [k, v] : e.items()) {
                if (!v.is_string()) return R::error(path + ": __metadata__." + k + " is not a string");
                f.metadata[k] = v.get<std::string>();
            }
            continue;
        }
        const std::string where = path + ": tensor " + name;
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
            return R::error(where + ": needs dtype, shape and data_offsets");
        if (e["dtype"] != "F32") return R::error(where + ": dtype " + e["dtype"].dump() + " (only F32 is read)");
        SafeTensor t;
        t.name = name;
        const auto& sh = e["shape"];
        if (!sh.is_array() || sh.size() > 8) return R::error(where + ": shape must be an array of at most 8 dimensions");
        uint64_t elements = 1;
        for (const auto& d : sh) {
            if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40))
                return R::error(where + ": a dimension is not an integer in [0, 2^40]");
            const uint64_t v = d.get<uint64_t>();
            if (v > 0 && elements > data_bytes / v) return R::error(where + ": its shape is larger than the file");
            elements *= v;
            t.shape.push_back(static_cast<int64_t>(v));
        }
        const auto& off = e["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            return R::error(where + ": data_offsets must be two non-negative integers");
        const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
        if (b > en || en > data_bytes || en - b != elements * sizeof(float))
            return R::error(where + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(en) +
                            "] do not fit its shape or the file's " + std::to_string(data_bytes) + " data bytes");
        spans.push_back({b, en, name});
        f.tensors.push_back(std::move(t));
    }
    std::vector<size_t> order(spans.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return spans[a].begin < spans[b].begin; });
    for (size_t i = 1; i < order.size(); ++i)
        if (spans[order[i]].begin < spans[order[i - 1]].end && spans[order[i]].begin != spans[order[i]].end)
            return R::error(path + ": tensors " + spans[order[i - 1]].name + " and " + spans[order[i]].name + " overlap");
    std::vector<SafeTensor> sorted;
    std::vector<uint8_t> buf;
    for (size_t i : order) {
        SafeTensor& t = f.tensors[i];
        const uint64_t bytes = spans[i].end - spans[i].begin;
        buf.resize(bytes);
        in.seekg(static_cast<std::streamoff>(8 + n + spans[i].begin));
        if (bytes > 0 && !in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(bytes)))
            return R::error(path + ": tensor " + t.name + ": cannot read its data");
        t.values.resize(bytes / sizeof(float));
        for (size_t k = 0; k < t.values.size(); ++k) t.values[k] = le::get_f32(buf.data() + 4 * k);
        sorted.push_back(std::move(t));
    }
    f.tensors = std::move(sorted);
    return f;
}

}  // namespace tw

// llm.c-compatible token shards.
#include "engine/data/shard.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace tw {

Status write_shard(const std::string& path, const std::vector<uint16_t>& tokens) {
    if (tokens.size() > INT32_MAX) return Status::error("shard " + path + ": too many tokens for an int32 count");
    int32_t header[kShardHeaderInts] = {};
    header[0] = kShardMagic;
    header[1] = kShardVersion;
    header[2] = static_cast<int32_t>(tokens.size());
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) return Status::error("cannot write " + tmp);
        out.write(reinterpret_cast<const char*>(header), sizeof header);
        out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2));
        if (!out.flush()) return Status::error("write failed for " + tmp);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) return Status::error("cannot rename " + tmp + " to " + path + ": " + ec.message());
    return Status::ok();
}

Result<std::vector<uint16_t>> read_shard(const std::string& path) {
    using R = Result<std::vector<uint16_t>>;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return R::error("shard " + path + ": is a folder, not a .bin file");
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        const bool there = std::filesystem::exists(path, ec);
        return R::error("shard " + path + ": " + (there ? "cannot be opened for reading" : "no such file"));
    }
    const auto file_bytes = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
    int32_t header[kShardHeaderInts];
    if (file_bytes < sizeof header)
        return R::error("shard " + path + ": file has " + std::to_string(file_bytes) + " bytes, less than the " +
                        std::to_string(sizeof header) + "-byte header");
    in.read(reinterpret_cast<char*>(header), sizeof header);
    if (header[0] != kShardMagic)
        return R::error("shard " + path + ": bad magic " + std::to_string(header[0]) + " (expected " +
                        std::to_string(kShardMagic) + "; not an llm.c .bin shard)");
    if (header[1] != kShardVersion)
        return R::error("shard " + path + ": unsupported version " + std::to_string(header[1]) + " (expected " +
                        std::to_string(kShardVersion) + " = uint16 tokens)");
    if (header[2] < 0) return R::error("shard " + path + ": negative token count " + std::to_string(header[2]));
    const uint64_t n = static_cast<uint64_t>(header[2]);
    const uint64_t body = file_bytes - sizeof header;
    if (body != 2 * n)
        return R::error("shard " + path + ": header says " + std::to_string(n) + " tokens (" + std::to_string(2 * n) +
                        " bytes) but the body has " + std::to_string(body) + " bytes" +
                        (body < 2 * n ? " (truncated)" : ""));
    std::vector<uint16_t> tokens(n);
    in.read(reinterpret_cast<char*>(tokens.data()), static_cast<std::streamsize>(2 * n));
    if (!in) return R::error("shard " + path + ": read failed");
    return tokens;
}

}  // namespace tw

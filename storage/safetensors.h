// The safetensors file format, written and read without LibTorch: an 8-byte little-endian header
// length N, N bytes of JSON — {"NAME": {"dtype": "F32", "shape": [...], "data_offsets": [begin,
// end]}, ..., "__metadata__": {"key": "text"}} — then the tensors' raw little-endian bytes, each at
// its offsets relative to the end of the header. Only F32 tensors (the engine's dtype) are written
// and read.
// Reading is hostile by default: a file from anywhere is checked before a byte of its data is used
// (header length within the file and at most 100 MiB, valid JSON, each entry's dtype, shape and
// offsets consistent with its size and inside the file, no two tensors overlapping); the error
// names the file and the entry.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace tw {

struct SafeTensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> values;  // row-major, numel(shape) values
};

struct SafeTensorsFile {
    std::vector<SafeTensor> tensors;            // in the file's data order
    std::map<std::string, std::string> metadata;
    const SafeTensor* find(const std::string& name) const;
};

// Writes `f` to `path` atomically (PATH.tmp, then rename), tensors in the given order, names sorted
// in the header as the format's own writers do. Errors name the path; a tensor whose values do not
// match its shape is refused.
Status write_safetensors(const std::string& path, const SafeTensorsFile& f);
Result<SafeTensorsFile> read_safetensors(const std::string& path);

}  // namespace tw

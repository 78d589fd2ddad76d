// The codec bench's PyTorch reference; see codec_reference.h.
#include "engine/bench/codec_reference.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tw {

std::map<CodecReferenceKey, CodecReferenceCell> run_codec_reference(const CodecReferenceRun& a) {
    std::map<CodecReferenceKey, CodecReferenceCell> out;
    if (!std::ifstream(a.script)) {
        std::fprintf(stderr,
                     "bench codec: %s not found (run from the repository root or pass --reference); "
                     "no PyTorch column\n",
                     a.script.c_str());
        return out;
    }
    std::string shape_list, k_list;
    for (auto [r, c] : a.shapes)
        shape_list += (shape_list.empty() ? "" : ",") + std::to_string(r) + "x" + std::to_string(c);
    for (int64_t k : a.ks) k_list += (k_list.empty() ? "" : ",") + std::to_string(k);
    const std::string cmd = "OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 " + a.python + " " + a.script +
                            " --bench --threads 1 --shapes " + shape_list + " --ks " + k_list + " --reps " +
                            std::to_string(a.reps) + " --warmup " + std::to_string(a.warmup) + " --min-time " +
                            std::to_string(a.min_time_s);
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) {
        std::fprintf(stderr, "bench codec: cannot start %s; no PyTorch column\n", cmd.c_str());
        return out;
    }
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) {
        auto j = nlohmann::json::parse(buf, nullptr, false);
        if (j.is_discarded() || !j.is_object() || j.value("impl", "") != "pytorch") continue;
        if (j.value("threads", 0) != 1)
            std::fprintf(stderr, "bench codec: the reference ran with %d threads\n", j.value("threads", 0));
        out[{j.at("rows").get<int64_t>(), j.at("cols").get<int64_t>(), j.at("k").get<int64_t>()}] =
            CodecReferenceCell{j.at("encode_s").get<double>(), j.at("decode_s").get<double>(),
                               j.at("total_s").get<double>()};
    }
    if (int rc = pclose(p); rc != 0) std::fprintf(stderr, "bench codec: `%s` exited with status %d\n", cmd.c_str(), rc);
    return out;
}

}  // namespace tw

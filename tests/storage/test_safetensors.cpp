// safetensors written and read without LibTorch (storage/safetensors.h), hostile files refused
// with their reason, and the Hugging Face Llama layout of a model (storage/hf_llama.h): the fused
// projections split by rows, names and shapes as the layout has them, tied and untied heads.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/little_endian.h"
#include "core/model_size.h"
#include "storage/hf_llama.h"
#include "storage/safetensors.h"

namespace tw {
namespace {

std::string temp(const std::string& name) { return ::testing::TempDir() + "/st-" + std::to_string(::getpid()) + "-" + name; }

std::string bytes_of(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& b) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(b.size()));
}

// A file of `header` JSON (padded to 8 bytes) and `data` bytes.
std::string file_of(std::string header, const std::string& data) {
    header.append((8 - header.size() % 8) % 8, ' ');
    uint8_t len[8];
    le::put_u64(len, header.size());
    return std::string(reinterpret_cast<const char*>(len), 8) + header + data;
}

TEST(SafeTensors, TheBytesAreTheFormatsAndReadBack) {
    SafeTensorsFile f;
    f.tensors.push_back({"b", {2}, {1.0f, -2.0f}});
    f.tensors.push_back({"a", {1, 1}, {0.5f}});
    f.metadata["format"] = "thinwire";
    const std::string path = temp("ok.safetensors");
    ASSERT_TRUE(write_safetensors(path, f));
    const std::string b = bytes_of(path);
    const uint64_t n = le::get_u64(reinterpret_cast<const uint8_t*>(b.data()));
    EXPECT_EQ(n % 8, 0u);
    const std::string header = b.substr(8, n);
    EXPECT_NE(header.find(R"("b":{"data_offsets":[0,8],"dtype":"F32","shape":[2]})"), std::string::npos) << header;
    EXPECT_NE(header.find(R"("a":{"data_offsets":[8,12],"dtype":"F32","shape":[1,1]})"), std::string::npos) << header;
    EXPECT_NE(header.find(R"("__metadata__":{"format":"thinwire"})"), std::string::npos) << header;
    // 1.0f = 0x3f800000, -2.0f = 0xc0000000, 0.5f = 0x3f000000, little-endian.
    EXPECT_EQ(b.substr(8 + n), std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x00\x3f", 12));
    auto back = read_safetensors(path);
    ASSERT_TRUE(back) << back.message();
    ASSERT_EQ(back->tensors.size(), 2u);
    EXPECT_EQ(back->find("b")->values, (std::vector<float>{1.0f, -2.0f}));
    EXPECT_EQ(back->find("a")->shape, (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(back->metadata.at("format"), "thinwire");
    SafeTensorsFile wrong;
    wrong.tensors.push_back({"x", {3}, {1.0f}});
    EXPECT_NE(write_safetensors(temp("wrong"), wrong).message().find("holds 1 values for its shape"), std::string::npos);
    std::filesystem::remove(path);
}

TEST(SafeTensors, HostileFilesAreRefusedWithTheirReason) {
    const std::string eight(8, '\0');
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"abc", "shorter than 8 bytes"},
        {file_of("{}", "").substr(0, 8) + "{", "a header of"},
        {file_of("[1, 2]", ""), "not a JSON object"},
        {file_of("{not json", ""), "not a JSON object"},
        {file_of(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", "\x00\x00"), "only F32"},
        {file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", eight), "do not fit its shape"},
        {file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", eight), "do not fit"},
        {file_of(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", eight), "not an integer"},
        {file_of(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}})", eight),
         "larger than the file"},
        {file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 eight),
         "overlap"},
        {file_of(R"({"a":{"dtype":"F32","shape":[1]}})", eight), "needs dtype, shape and data_offsets"},
        {file_of(R"({"__metadata__":{"k":1}})", ""), "is not a string"},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::string path = temp("bad" + std::to_string(i));
        write_bytes(path, cases[i].first);
        auto r = read_safetensors(path);
        ASSERT_FALSE(r) << "case " << i;
        EXPECT_NE(r.message().find(cases[i].second), std::string::npos) << "case " << i << ": " << r.message();
        EXPECT_EQ(r.message().rfind(path, 0), 0u) << "the error names the file: " << r.message();
        std::filesystem::remove(path);
    }
    EXPECT_FALSE(read_safetensors(temp("missing")));
}

// Every value of tensor t is t's index in the model times 1000 plus its own flat index: where each
// Hugging Face tensor's values came from is then readable.
SafeTensorsFile numbered(const ModelConfig& m) {
    SafeTensorsFile f;
    const auto ts = model_tensors(m);
    for (size_t k = 0; k < ts.size(); ++k) {
        SafeTensor t{ts[k].name, ts[k].shape, {}};
        for (int64_t i = 0; i < ts[k].numel(); ++i) t.values.push_back(static_cast<float>(1000 * k + static_cast<size_t>(i)));
        f.tensors.push_back(std::move(t));
    }
    return f;
}

TEST(HfLlama, FusedProjectionsAreSplitByRowsAndNamedAsTheLayoutHasThem) {
    ModelConfig m;
    m.vocab_size = 5, m.d_model = 4, m.n_layer = 1, m.n_head = 2, m.d_ff = 6, m.tie_embeddings = false;
    const SafeTensorsFile engine = numbered(m);
    auto hf = to_hf_llama(engine, m);
    ASSERT_TRUE(hf) << hf.message();
    EXPECT_EQ(hf->tensors.size(), 12u);  // embed, 9 per layer, norm, lm_head
    const SafeTensor& qkv = *engine.find("block_0.wqkv");  // [12, 4]: q rows 0-3, k 4-7, v 8-11
    const SafeTensor* q = hf->find("model.layers.0.self_attn.q_proj.weight");
    const SafeTensor* k = hf->find("model.layers.0.self_attn.k_proj.weight");
    const SafeTensor* v = hf->find("model.layers.0.self_attn.v_proj.weight");
    ASSERT_TRUE(q && k && v);
    EXPECT_EQ(q->shape, (std::vector<int64_t>{4, 4}));
    EXPECT_EQ(q->values.front(), qkv.values[0]);
    EXPECT_EQ(k->values.front(), qkv.values[4 * 4]);   // row 4
    EXPECT_EQ(v->values.back(), qkv.values.back());    // row 11, last column
    const SafeTensor& w13 = *engine.find("block_0.w13");  // [12, 4]: gate rows 0-5, up 6-11
    const SafeTensor* gate = hf->find("model.layers.0.mlp.gate_proj.weight");
    const SafeTensor* up = hf->find("model.layers.0.mlp.up_proj.weight");
    ASSERT_TRUE(gate && up);
    EXPECT_EQ(gate->shape, (std::vector<int64_t>{6, 4}));
    EXPECT_EQ(up->values.front(), w13.values[6 * 4]);
    EXPECT_EQ(hf->find("model.layers.0.mlp.down_proj.weight")->shape, (std::vector<int64_t>{4, 6}));
    EXPECT_EQ(hf->find("lm_head.weight")->values, engine.find("head")->values);
    EXPECT_EQ(hf->find("model.norm.weight")->values, engine.find("norm_f")->values);
    EXPECT_NE(hf_llama_config_json(m, false).find("\"intermediate_size\": 6"), std::string::npos);

    // Tied: no lm_head. A frozen embedding is added on the input side and unties the head.
    m.tie_embeddings = true;
    SafeTensorsFile tied = numbered(m);
    auto t = to_hf_llama(tied, m);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->find("lm_head.weight"), nullptr);
    tied.tensors.push_back({"frozen_emb", {5, 4}, std::vector<float>(20, 0.5f)});
    auto folded = to_hf_llama(tied, m);
    ASSERT_TRUE(folded);
    EXPECT_EQ(folded->find("model.embed_tokens.weight")->values[3], tied.find("tok_emb")->values[3] + 0.5f);
    EXPECT_EQ(folded->find("lm_head.weight")->values, tied.find("tok_emb")->values);
    // A missing or misshapen tensor is named.
    tied.tensors.erase(tied.tensors.begin());
    EXPECT_NE(to_hf_llama(tied, m).message().find("no tensor tok_emb"), std::string::npos);
}

}  // namespace
}  // namespace tw

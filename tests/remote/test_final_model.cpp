// The final model's way to the coordinator (core/final_model.h): `model` messages round-trip and
// malformed ones are refused with their reason; the coordinator's assembly takes only the run's
// tensors, in order, and writes the model of the nodes it is told, a pipeline's stages together.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <unistd.h>
#include <zmq.hpp>

#include "coordinator/final_model_assembly.h"
#include "core/little_endian.h"
#include "core/model_size.h"
#include "remote/protocol.h"
#include "storage/safetensors.h"

namespace tw {
namespace {

ModelConfig micro() {
    ModelConfig m;
    m.vocab_size = 10;
    m.d_model = 4;
    m.n_layer = 2;
    m.n_head = 2;
    m.d_ff = 8;
    m.tie_embeddings = true;
    return m;
}

// A whole tensor of `model` as one part, values start, start + 1, ...
FinalModelPart tensor_part(const TensorShape& t, float start) {
    FinalModelPart p;
    p.name = t.name;
    p.shape = t.shape;
    p.total = static_cast<uint64_t>(t.numel()) * 4;
    p.bytes.resize(p.total);
    for (int64_t i = 0; i < t.numel(); ++i) le::put_f32(p.bytes.data() + 4 * i, start + static_cast<float>(i));
    return p;
}

TEST(FinalModel, PartsRoundTripAndMalformedOnesAreRefused) {
    FinalModelPart p = tensor_part(model_tensors(micro())[0], 1);
    p.offset = 0;
    auto frames = encode(model_message("replica-0", p));
    auto dec = decode(frames);
    ASSERT_TRUE(dec) << dec.message();
    EXPECT_EQ(dec->kind, MsgKind::kModel);
    auto back = model_part_from_message(*dec);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->name, p.name);
    EXPECT_EQ(back->shape, p.shape);
    EXPECT_EQ(back->bytes, p.bytes);
    struct Case {
        std::function<void(Message&)> mutate;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {[](Message& m) { m.body["part"] = "../etc/passwd"; }, "\"part\" must be a name"},
        {[](Message& m) { m.body["part"] = ".."; }, "\"part\" must be a name"},
        {[](Message& m) { m.body["file"] = 1; }, "\"file\" must be true or false"},
        {[](Message& m) { m.body["shape"] = {1, 2, 3, 4, 5}; }, "at most 4 dimensions"},
        {[](Message& m) { m.body["shape"][0] = 0; }, "not an integer in [1, 2^40]"},
        {[](Message& m) { m.body["shape"] = {uint64_t{1} << 40, uint64_t{1} << 40}; }, "more than 2^44 elements"},
        {[](Message& m) { m.body["total"] = 12; }, "bytes for its shape"},
        {[](Message& m) { m.body["offset"] = -1; }, "\"offset\""},
        {[](Message& m) { m.body["offset"] = 8; }, "a frame of 160 bytes at offset 8"},
        {[](Message& m) { m.blobs.clear(); }, "expected one binary frame, got 0"},
        {[](Message& m) { m.blobs[0].push_back(0); }, "a frame of 161 bytes at offset 0"},
        {[](Message& m) { m.body["file"] = true; }, "a file part has no shape"},
        {[](Message& m) { m.body["file"] = true; m.body["shape"] = nlohmann::json::array(); m.body["total"] = uint64_t{1} << 40; },
         "at most"},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        Message m = *dec;
        cases[i].mutate(m);
        auto r = model_part_from_message(m);
        ASSERT_FALSE(r) << "case " << i;
        EXPECT_NE(r.message().find(cases[i].expect), std::string::npos) << "case " << i << ": " << r.message();
    }
}

TEST(FinalModel, TheAssemblyTakesTheRunsTensorsInOrderAndWritesAPipelinesStagesTogether) {
    const ModelConfig m = micro();
    const auto tensors = model_tensors(m);  // tok_emb, norm_f, block_0.*, block_1.*
    FinalModelAssembly a(m);
    // Refusals: a tensor the model does not have, another shape, a part out of order, a file name.
    FinalModelPart bad = tensor_part(tensors[0], 0);
    bad.name = "head";  // tied: no head
    EXPECT_NE(a.add("x", bad).message().find("is not a tensor of the run's model"), std::string::npos);
    bad = tensor_part(tensors[0], 0);
    bad.shape = {5, 8};
    EXPECT_NE(a.add("x", bad).message().find("another shape"), std::string::npos);
    FinalModelPart late = tensor_part(tensors[0], 0);
    late.offset = 4;
    late.bytes.resize(late.total - 4);
    EXPECT_NE(a.add("y", late).message().find("first part starts at byte 4"), std::string::npos);
    FinalModelPart file;
    file.name = "passwd";
    file.file = true;
    EXPECT_NE(a.add("x", file).message().find("not a tokenizer file"), std::string::npos);

    // Two stages: stage 0 the embedding and block 0, stage 1 block 1 and the final norm, each in
    // two halves of its first tensor.
    for (const TensorShape& t : tensors) {
        const std::string node = t.name == "tok_emb" || t.name.rfind("block_0.", 0) == 0 ? "s0" : "s1";
        FinalModelPart whole = tensor_part(t, static_cast<float>(t.numel()));
        FinalModelPart first = whole, second = whole;
        first.bytes.resize(whole.total / 2);
        second.offset = whole.total / 2;
        second.bytes.assign(whole.bytes.begin() + static_cast<long>(whole.total / 2), whole.bytes.end());
        ASSERT_TRUE(a.add(node, first));
        EXPECT_FALSE(a.complete(node));
        ASSERT_TRUE(a.add(node, second));
    }
    EXPECT_FALSE(a.add("s0", tensor_part(tensors[0], 0))) << "a part after the tensor was complete";
    EXPECT_TRUE(a.complete("s0"));
    EXPECT_TRUE(a.complete("s1"));
    const std::string dir = ::testing::TempDir() + "/final-model-" + std::to_string(::getpid());
    EXPECT_NE(a.write(dir, {"s0"}, "m.safetensors").message().find("the final model lacks"), std::string::npos);
    auto w = a.write(dir, {"s0", "s1"}, "m.safetensors");
    ASSERT_TRUE(w) << w.message();
    auto back = read_safetensors(dir + "/m.safetensors");
    ASSERT_TRUE(back) << back.message();
    ASSERT_EQ(back->tensors.size(), tensors.size());
    for (const TensorShape& t : tensors) {
        const SafeTensor* s = back->find(t.name);
        ASSERT_NE(s, nullptr) << t.name;
        EXPECT_EQ(s->shape, t.shape);
        EXPECT_EQ(s->values.front(), static_cast<float>(t.numel()));
        EXPECT_EQ(s->values.back(), static_cast<float>(2 * t.numel() - 1));
    }
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tw

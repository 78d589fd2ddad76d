// Helpers shared by the engine tests that run R replicas as threads of one test: run a function
// per replica and collect its error, a fixed synthetic token stream (vocabulary 53), a trainer on
// a replica's part of it, and the parameters' names and flattened values.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/train/trainer.h"

namespace tw::testing_support {

// Runs fn(r) on R threads; returns every replica's error ("" = ok), exceptions included.
inline std::vector<std::string> on_threads(int R, const std::function<std::string(int)>& fn) {
    std::vector<std::string> errors(static_cast<size_t>(R));
    std::vector<std::thread> threads;
    for (int r = 0; r < R; ++r)
        threads.emplace_back([&, r] {
            try {
                errors[static_cast<size_t>(r)] = fn(r);
            } catch (const std::exception& e) {
                errors[static_cast<size_t>(r)] = std::string("exception: ") + e.what();
            }
        });
    for (auto& t : threads) t.join();
    return errors;
}

inline void expect_no_errors(const std::vector<std::string>& errors) {
    for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "replica " << r;
}

// 30,000 tokens below 53 from a fixed seed, built once.
inline std::shared_ptr<std::vector<uint16_t>> synthetic_tokens() {
    static auto t = [] {
        auto v = std::make_shared<std::vector<uint16_t>>(30000);
        std::mt19937 rng(5);
        for (auto& x : *v) x = static_cast<uint16_t>(rng() % 53);
        return v;
    }();
    return t;
}

// A trainer of replica `replica` of `n` on the synthetic tokens: 16-token windows, batch 4.
inline Trainer synthetic_trainer(const RunConfig& c, int replica, int n) {
    return Trainer(c, WindowLoader(synthetic_tokens(), {{0, 30000}}, 16, 4, 1, replica, n),
                   WindowLoader(synthetic_tokens(), {{0, 30000}}, 16, 4, 2));
}

inline std::vector<std::string> param_names(Trainer& t) {
    std::vector<std::string> n;
    for (auto& item : t.model()->named_parameters()) n.push_back(item.key());
    return n;
}

// Every tensor's values in one detached 1-D copy.
inline torch::Tensor flatten_copy(const std::vector<torch::Tensor>& ts) {
    std::vector<torch::Tensor> parts;
    for (auto& t : ts) parts.push_back(t.detach().reshape({-1}).clone());
    return torch::cat(parts);
}

}  // namespace tw::testing_support

// c10d's Store over the group's rendezvous store (core/kv_store.h), so ProcessGroupGloo meets its
// peers through the authenticated ZeroMQ store instead of an open TCPStore.
//
// Engine-internal: include it only from .cpp files (it pulls in c10d's Store.hpp); public headers
// such as ddp.h name no c10d type.
//
// Errors become c10::Error (TORCH_CHECK), as TCPStore's do, so c10d and Gloo handle them as they
// would a TCPStore failure. Ownership: shares the KvStore with whoever built it, so the client
// stays alive as long as c10d holds this store. Thread-safe as the KvStore is.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_store.h"

namespace tw {

class C10dKvStore : public c10d::Store {
public:
    C10dKvStore(std::shared_ptr<KvStore> kv, std::chrono::milliseconds timeout);

    void set(const std::string& key, const std::vector<uint8_t>& value) override;
    std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                    const std::vector<uint8_t>& desired) override;
    // Waits up to getTimeout() for the key, as TCPStore's get does.
    std::vector<uint8_t> get(const std::string& key) override;
    int64_t add(const std::string& key, int64_t value) override;
    bool deleteKey(const std::string& key) override;
    bool check(const std::vector<std::string>& keys) override;
    int64_t getNumKeys() override;
    void wait(const std::vector<std::string>& keys) override;
    void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

private:
    std::shared_ptr<KvStore> kv_;
};

}  // namespace tw

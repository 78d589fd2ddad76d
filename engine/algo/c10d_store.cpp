// c10d::Store over KvStore; see c10d_store.h.
#include "engine/algo/c10d_store.h"

#include <c10/util/Exception.h>

namespace tw {
namespace {

template <class T>
T value_or_throw(Result<T> r) {
    TORCH_CHECK(r.is_ok(), r.message());
    return std::move(*r);
}

void ok_or_throw(const Status& s) { TORCH_CHECK(s.is_ok(), s.message()); }

}  // namespace

C10dKvStore::C10dKvStore(std::shared_ptr<KvStore> kv, std::chrono::milliseconds timeout)
    : c10d::Store(timeout), kv_(std::move(kv)) {
    TORCH_CHECK(kv_ != nullptr, "C10dKvStore needs a store");
}

void C10dKvStore::set(const std::string& key, const std::vector<uint8_t>& value) { ok_or_throw(kv_->set(key, value)); }

std::vector<uint8_t> C10dKvStore::compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                             const std::vector<uint8_t>& desired) {
    return value_or_throw(kv_->compare_set(key, expected, desired));
}

std::vector<uint8_t> C10dKvStore::get(const std::string& key) {
    return value_or_throw(kv_->get(key, timeout_.count()));
}

int64_t C10dKvStore::add(const std::string& key, int64_t value) { return value_or_throw(kv_->add(key, value)); }

bool C10dKvStore::deleteKey(const std::string& key) { return value_or_throw(kv_->delete_key(key)); }

bool C10dKvStore::check(const std::vector<std::string>& keys) { return value_or_throw(kv_->check(keys)); }

int64_t C10dKvStore::getNumKeys() { return value_or_throw(kv_->num_keys()); }

void C10dKvStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void C10dKvStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
    ok_or_throw(kv_->wait(keys, timeout.count()));
}

}  // namespace tw

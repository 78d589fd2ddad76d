// MetricBuffer: batching of metric records into RunStore transactions, with errors kept for flush().
#include "storage/metric_writer.h"

#include <cstdio>
#include <exception>
#include <utility>

#include "core/assert.h"

namespace tw {

MetricBuffer::MetricBuffer(RunStore& store, int64_t run_id, size_t flush_at)
    : store_(store), run_id_(run_id), flush_at_(flush_at), next_attempt_at_(flush_at) {
    TW_ASSERT(flush_at >= 1);
    pending_.reserve(flush_at);
}

MetricBuffer::~MetricBuffer() {
    try {
        Status s = flush();
        if (!s) {
            std::fprintf(stderr, "thinwire: saving metrics of run %lld failed (%zu records unsaved): %s\n",
                         static_cast<long long>(run_id_), pending_.size(), s.message().c_str());
        }
    } catch (const std::exception& e) {  // e.g. bad_alloc while building a message; a destructor must not throw
        std::fprintf(stderr, "thinwire: flushing metrics of run %lld failed: %s\n", static_cast<long long>(run_id_),
                     e.what());
    } catch (...) {
        std::fprintf(stderr, "thinwire: flushing metrics of run %lld failed\n", static_cast<long long>(run_id_));
    }
}

void MetricBuffer::add(MetricRecord record) {
    pending_.push_back(std::move(record));
    if (pending_.size() < next_attempt_at_) return;
    Status s = write_pending();
    if (!s && kept_error_.is_ok()) kept_error_ = std::move(s);
}

Status MetricBuffer::flush() {
    Status now = write_pending();
    Status kept = std::exchange(kept_error_, Status::ok());
    return kept.is_ok() ? now : kept;
}

Status MetricBuffer::write_pending() {
    Status s = pending_.empty() ? Status::ok() : store_.add_metrics(run_id_, pending_);
    if (s) {
        pending_.clear();
        next_attempt_at_ = flush_at_;
    } else {
        next_attempt_at_ = pending_.size() + flush_at_;
    }
    return s;
}

}  // namespace tw

// RunWriter; see run_writer.h.
#include "storage/run_writer.h"

#include <chrono>
#include <cstdio>

#include "storage/metric_writer.h"

namespace tw {

RunWriter::RunWriter(RunStore& store, int64_t run_id, double flush_every_s)
    : store_(store), run_id_(run_id), flush_every_s_(flush_every_s), thread_([this] { loop(); }) {}

RunWriter::~RunWriter() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        closing_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void RunWriter::add_metrics(std::vector<MetricRecord> records) {
    bool full = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (rows_.empty()) rows_ = std::move(records);
        else rows_.insert(rows_.end(), std::make_move_iterator(records.begin()), std::make_move_iterator(records.end()));
        full = rows_.size() >= MetricBuffer::kDefaultFlushAt;
    }
    // A full batch is committed at once, as MetricBuffer does: readers (the workbench's live plots,
    // `runs show`) see a fast run's rows every batch, not only once a second.
    if (full) wake_.notify_all();
}

void RunWriter::add_event(EventRecord e) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back([this, e = std::move(e)] {
            if (Status st = store_.add_event(run_id_, e); !st)
                std::fprintf(stderr, "thinwire: event of %s not stored: %s\n", e.node.c_str(), st.message().c_str());
        });
    }
    wake_.notify_all();
}

void RunWriter::heartbeat() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back([this] {
            if (Status st = store_.heartbeat(run_id_); !st)
                std::fprintf(stderr, "thinwire: heartbeat not stored: %s\n", st.message().c_str());
        });
    }
    wake_.notify_all();
}

Status RunWriter::drain() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t ticket = ++queued_;
    flush_now_ = true;
    wake_.notify_all();
    done_.wait(lock, [&] { return written_ >= ticket; });
    Status st = kept_error_;
    kept_error_ = Status::ok();
    return st;
}

void RunWriter::loop() {
    using Clock = std::chrono::steady_clock;
    MetricBuffer batch(store_, run_id_);
    Clock::time_point last_flush = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        wake_.wait_for(lock, std::chrono::duration<double>(flush_every_s_), [&] {
            return closing_ || flush_now_ || !jobs_.empty() || rows_.size() >= MetricBuffer::kDefaultFlushAt;
        });
        std::deque<Job> jobs;
        jobs.swap(jobs_);
        std::vector<MetricRecord> rows;
        rows.swap(rows_);
        const bool closing = closing_;
        const bool flush = flush_now_ || closing ||
                           std::chrono::duration<double>(Clock::now() - last_flush).count() >= flush_every_s_;
        const uint64_t upto = queued_;
        flush_now_ = false;
        lock.unlock();
        // The disk is touched only here, with the lock released: the callers never wait on it.
        for (MetricRecord& r : rows) batch.add(std::move(r));
        for (Job& job : jobs) job();
        Status st;
        if (flush) {
            st = batch.flush();  // failed rows stay in the batch for the next attempt
            last_flush = Clock::now();
            if (!st && !closing) std::fprintf(stderr, "thinwire: metrics not stored yet: %s\n", st.message().c_str());
        }
        lock.lock();
        if (!st && kept_error_.is_ok()) kept_error_ = st;
        written_ = upto;
        done_.notify_all();
        if (closing) return;  // the batch's destructor retries what is still pending
    }
}

}  // namespace tw

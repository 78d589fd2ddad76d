// RunWriter; see run_writer.h.
#include "storage/run_writer.h"

#include <chrono>
#include <cstdio>
#include <iterator>
#include <string>

#include "storage/metric_writer.h"

namespace tw {

RunWriter::RunWriter(RunStore& store, int64_t run_id, double flush_every_s, int64_t reserve_bytes)
    : store_(store), run_id_(run_id), flush_every_s_(flush_every_s), reserve_bytes_(reserve_bytes),
      thread_([this] { loop(); }) {}

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
            if (Status st = store_.add_event(run_id_, e); !st) {
                std::fprintf(stderr, "thinwire: event of %s not stored: %s\n", e.node.c_str(), st.message().c_str());
                note_failure(st);
            }
        });
    }
    wake_.notify_all();
}

void RunWriter::heartbeat() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back([this] {
            if (Status st = store_.heartbeat(run_id_); !st) {
                std::fprintf(stderr, "thinwire: heartbeat not stored: %s\n", st.message().c_str());
                note_failure(st);
            }
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

Status RunWriter::failure() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_failure_;
}

size_t RunWriter::unstored() const {
    std::lock_guard<std::mutex> lock(mu_);
    return rows_.size() + batch_pending_;
}

void RunWriter::note_failure(const Status& st) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_failure_.is_ok()) first_failure_ = st;
}

Status RunWriter::check_room() {
    if (reserve_bytes_ <= 0) return Status::ok();
    auto room = store_.room_bytes();
    if (!room) return room.status();
    if (room.value() >= reserve_bytes_) return Status::ok();
    auto kib = [](int64_t bytes) { return std::to_string(bytes >> 10) + " KiB"; };
    return Status::error("the disk is nearly full: " + kib(room.value()) + " of room left for " + store_.path() +
                         " (its file system's free space or SQLite's page limit), under the " + kib(reserve_bytes_) +
                         " kept for ending the run");
}

void RunWriter::loop() {
    using Clock = std::chrono::steady_clock;
    MetricBuffer batch(store_, run_id_);
    std::vector<MetricRecord> held;  // rows not yet in the batch: held back while under the reserve
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
        const bool spend = flush_now_ || closing;  // drain() and the end write into the reserve
        const bool flush = spend || std::chrono::duration<double>(Clock::now() - last_flush).count() >= flush_every_s_;
        const uint64_t upto = queued_;
        flush_now_ = false;
        lock.unlock();
        // The disk is touched only here, with the lock released: the callers never wait on it.
        held.insert(held.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
        for (Job& job : jobs) job();
        // Under the reserve the rows are held back (not even the batch's automatic write runs) until
        // drain() spends it.
        bool low = false;
        if (!spend && !held.empty() && (flush || held.size() >= MetricBuffer::kDefaultFlushAt)) {
            if (Status room = check_room(); !room) {
                low = true;
                note_failure(room);
            }
        }
        if (!low) {
            for (MetricRecord& r : held) batch.add(std::move(r));
            held.clear();
        }
        Status st;
        if (flush && !low) {
            // Failed rows stay in the batch for the next attempt. Not printed here: failure() and
            // drain() hand the error to the coordinator, which stops the run and says so once.
            st = batch.flush();
            last_flush = Clock::now();
        }
        lock.lock();
        batch_pending_ = batch.pending() + held.size();
        if (!st && kept_error_.is_ok()) kept_error_ = st;
        if (!st && first_failure_.is_ok()) first_failure_ = st;
        written_ = upto;
        done_.notify_all();
        if (closing) return;  // the batch's destructor retries what is still pending
    }
}

}  // namespace tw

// The coordinator's store sink; see store_sink.h.
#include "coordinator/store_sink.h"

#include <limits>
#include <set>

#include <unistd.h>

#include <cstdio>

#include "core/metric_names.h"

namespace tw {
namespace {

double since_s(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string human_bytes(double b) {
    char buf[32];
    const char* unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) b /= 1000, ++u;
    std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

}  // namespace

StoreSink::StoreSink(RunStore& store, int64_t run_id, int64_t steps, int64_t every, std::vector<std::string> nodes,
                     bool print, std::function<void(const EventRecord&)> on_event)
    : steps_(steps), every_(every), print_(print), tty_(print && isatty(fileno(stdout)) != 0),
      nodes_(std::move(nodes)), on_event_(std::move(on_event)), writer_(store, run_id) {}

void StoreSink::on_metrics(const std::vector<MetricRecord>& records) {
    // The whole batch first, then the lines it asks for: a step's bytes and evaluation follow its
    // loss in the batch, and the line shows them.
    std::vector<std::string> due;
    for (auto& m : records) {
        Line& l = lines_[m.node];
        if (m.name == metric::kTrainLoss) {
            l.step = m.step, l.loss = m.value;
            if (l.first_step < 0) l.first_step = m.step, l.first_at = Clock::now();
            if (print_ && !tty_ && (m.step % every_ == 0 || m.step == steps_)) due.push_back(m.node);
        } else if (m.name == metric::kValLoss) {
            l.val = m.value;
        } else if (m.name == metric::kTrainTokens) {
            l.tokens = static_cast<int64_t>(m.value);
        } else if (metric::is_bytes_sent(m.name)) {
            l.sent[m.name] = m.value;
        }
        l.sim_s = m.sim_s;
    }
    for (const std::string& node : due) print_line(node, lines_[node]);
    // A coordinator crash loses at most a second of metrics (the writer commits every second).
    writer_.add_metrics(records);
}

void StoreSink::on_event(const EventRecord& event) {
    // The coordinator's own events and a transport's (a lost node, a dropped frame) come without a
    // time: they get this sink's, seconds since the run's metric stream opened.
    EventRecord e = event;
    const double now = now_s();
    if (e.wall_s <= 0) e.wall_s = now;
    // Only what outsiders can provoke at will is rate-limited: junk or forged frames, dropped
    // connections, malformed messages. The run's own events (losses, restarts, checkpoints) are
    // never held back, however many come.
    static const std::set<std::string> kFloodKinds = {"dropped-frame", "connection-dropped", "bad-message",
                                                      "bad-metrics", "refused"};
    if (!kFloodKinds.count(e.kind)) {
        keep(e);
        return;
    }
    for (const EventRecord& k : throttle_.admit(e, now)) keep(k);
}

void StoreSink::keep(const EventRecord& e) {
    writer_.add_event(e);
    if (on_event_) on_event_(e);
    if (print_ && e.level != EventLevel::kInfo) std::printf("%s: %s: %s\n", e.node.c_str(), e.kind.c_str(), e.text.c_str());
}

void StoreSink::heartbeat() {
    for (const EventRecord& k : throttle_.flush(now_s())) keep(k);
    writer_.heartbeat();
}

Status StoreSink::flush() {
    // Every count still held back is stored now, with the time the run ends.
    for (EventRecord k : throttle_.flush(std::numeric_limits<double>::infinity())) {
        k.wall_s = now_s();
        keep(k);
    }
    return writer_.drain();
}

void StoreSink::redraw() {
    if (!tty_ || since_s(last_draw_) < 0.5) return;
    if (drawn_) std::printf("\033[%zuA", nodes_.size());
    for (auto& n : nodes_) print_line(n, lines_[n]);
    drawn_ = true;
    last_draw_ = Clock::now();
    std::fflush(stdout);
}

void StoreSink::finish() {
    if (!print_) return;
    if (tty_) {
        last_draw_ = Clock::time_point{};  // past the redraw throttle
        redraw();
        return;
    }
    for (auto& n : nodes_) {
        Line& l = lines_[n];
        if (l.first_step >= 0 && line_text(n, l) != l.printed) print_line(n, l);
    }
    std::fflush(stdout);
}

std::string StoreSink::line_text(const std::string& node, const Line& l) const {
    double sent = 0;
    for (auto& [k, v] : l.sent) sent += v;
    // "-" until the node reports a loss, never "nan"; the validation loss as the summary prints it.
    char loss[32] = "      -", val[32] = "", eta[32] = "";
    if (!std::isnan(l.loss)) std::snprintf(loss, sizeof loss, "%7.4f", l.loss);
    if (!std::isnan(l.val)) std::snprintf(val, sizeof val, "  val %.4f", l.val);
    // ETA from this node's own pace since its first step here (a resumed run starts past 0).
    if (l.first_step >= 0 && l.step > l.first_step && l.step < steps_) {
        const double per_step = since_s(l.first_at) / static_cast<double>(l.step - l.first_step);
        const auto left = static_cast<long long>(per_step * static_cast<double>(steps_ - l.step) + 0.5);
        std::snprintf(eta, sizeof eta, "  eta %lld:%02lld", left / 60, left % 60);
    }
    char text[256];
    std::snprintf(text, sizeof text, "%-12s step %6lld/%-6lld loss %s%s  sent %10s  sim %8.1f s%s", node.c_str(),
                  (long long)l.step, (long long)steps_, loss, val, human_bytes(sent).c_str(), l.sim_s, eta);
    return text;
}

void StoreSink::print_line(const std::string& node, Line& l) {
    l.printed = line_text(node, l);
    std::printf("%s%s\n", tty_ ? "\033[2K" : "", l.printed.c_str());
}

void StoreSink::on_model_part(const std::string& node, FinalModelPart part) {
    if (!model) return CoordinatorSink::on_model_part(node, std::move(part));
    if (Status st = model->add(node, std::move(part)); !st) on_event({0, node, EventLevel::kWarning, "model", st.message()});
}

}  // namespace tw

// Progress display: a redrawn bar on a terminal, plain lines every `every` steps otherwise.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace tw::cli {

class Progress {
public:
    Progress(int64_t total, int64_t every) : total_(total), every_(every), tty_(isatty(fileno(stdout)) != 0) {}

    // step: completed steps; start_step: where this process began (for ETA after a resume).
    void update(int64_t step, int64_t start_step, double loss, double tokens_per_s) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        const double rate = (step - start_step) / std::max(elapsed, 1e-9);
        const double eta = rate > 0 ? (total_ - step) / rate : 0;
        if (tty_) {
            const int width = 30, filled = static_cast<int>(width * step / std::max<int64_t>(total_, 1));
            std::string bar(filled, '#');
            bar.resize(width, '.');
            std::printf("\r[%s] %lld/%lld  loss %.4f  %.0f tok/s  ETA %s   ", bar.c_str(), (long long)step,
                        (long long)total_, loss, tokens_per_s, fmt_time(eta).c_str());
            std::fflush(stdout);
            dirty_ = true;
        } else if (step % every_ == 0 || step == total_) {
            std::printf("step %lld/%lld loss %.4f tok/s %.0f eta %s\n", (long long)step, (long long)total_, loss,
                        tokens_per_s, fmt_time(eta).c_str());
            std::fflush(stdout);
        }
    }
    // Prints a full line without tearing the bar.
    void line(const std::string& text) {
        if (dirty_) std::printf("\n");
        dirty_ = false;
        std::printf("%s\n", text.c_str());
        std::fflush(stdout);
    }
    void finish() {
        if (dirty_) std::printf("\n");
        dirty_ = false;
    }

private:
    static std::string fmt_time(double s) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%d:%02d", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
        return buf;
    }
    int64_t total_, every_;
    bool tty_, dirty_ = false;
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace tw::cli

// ZMTP byte counting; see zmtp_meter.h.
#include "remote/zmtp_meter.h"

#include <algorithm>
#include <cstring>

namespace tw {
namespace {

constexpr uint64_t kMaxFrame = uint64_t{1} << 40;  // nothing this process sends comes near it
constexpr char kMessageName[8] = {7, 'M', 'E', 'S', 'S', 'A', 'G', 'E'};
constexpr char kCurveName[6] = {'C', 'U', 'R', 'V', 'E', 0};
constexpr size_t kMechanismAt = 12;  // the greeting's mechanism field: 20 bytes from here

}  // namespace

ZmtpCount ZmtpMeter::feed(const uint8_t* data, size_t n) {
    ZmtpCount c;
    c.bytes = n;
    if (lost_) return c;
    size_t i = 0;
    while (i < n) {
        switch (state_) {
            case State::kGreeting: {
                const size_t take = std::min(need_, n - i);
                // Bytes 12..31 of the greeting name the security mechanism ("CURVE", NUL-padded).
                for (size_t k = 0; k < take; ++k) {
                    const size_t at = kZmtpGreetingBytes - need_ + k;
                    if (at >= kMechanismAt && at < kMechanismAt + sizeof(mechanism_)) mechanism_[at - kMechanismAt] = data[i + k];
                }
                i += take, need_ -= take;
                if (need_ == 0) {
                    curve_ = std::memcmp(mechanism_, kCurveName, sizeof(kCurveName)) == 0;
                    state_ = State::kFlags;
                }
                break;
            }
            case State::kFlags:
                flags_ = data[i++];
                size_len_ = 0;
                need_ = (flags_ & 0x02) ? 8 : 1;
                state_ = State::kSize;
                break;
            case State::kSize: {
                size_buf_[size_len_++] = data[i++];
                if (--need_ > 0) break;
                body_ = 0;
                for (size_t k = 0; k < size_len_; ++k) body_ = body_ << 8 | size_buf_[k];
                if (body_ > kMaxFrame) {
                    lost_ = true;
                    return c;
                }
                head_len_ = 0;
                need_ = static_cast<size_t>(body_);
                state_ = State::kBody;
                [[fallthrough]];
            }
            case State::kBody: {
                const size_t take = std::min(need_, n - i);
                // Keep the body's first bytes: its name, to tell a CURVE MESSAGE from the rest.
                const size_t keep = std::min(take, sizeof(head_) - head_len_);
                std::memcpy(head_ + head_len_, data + i, keep);
                head_len_ += keep;
                i += take, need_ -= take;
                if (need_ > 0) break;
                const bool command = (flags_ & 0x04) != 0;
                const bool box = head_len_ == sizeof(kMessageName) && std::memcmp(head_, kMessageName, sizeof(head_)) == 0 &&
                                 body_ >= kCurveMessageOverhead;
                if (curve_ || command) {  // a CURVE message is a MESSAGE box, in a command frame or not
                    if (box) c.frames += 1, c.payload += body_ - kCurveMessageOverhead;
                } else {
                    c.frames += 1, c.payload += body_;
                }
                state_ = State::kFlags;
                break;
            }
        }
    }
    return c;
}

}  // namespace tw

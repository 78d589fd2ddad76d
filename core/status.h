// Status and Result<T>: expected failures (bad config, unknown run, corrupt file) as values.
// Programmer errors use TW_ASSERT instead (core/assert.h).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tw {

class [[nodiscard]] Status {
public:
    Status() = default;  // ok
    static Status ok() { return {}; }
    static Status error(std::string message) { return Status(std::move(message)); }

    bool is_ok() const { return !message_.has_value(); }
    explicit operator bool() const { return is_ok(); }
    const std::string& message() const {
        static const std::string kEmpty;
        return message_ ? *message_ : kEmpty;
    }

private:
    explicit Status(std::string message) : message_(std::move(message)) {}
    std::optional<std::string> message_;
};

// Either a value or an error message. Access to the wrong side is a programmer error.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
    Result(Status status) : v_(std::move(status)) {}   // NOLINT: must be an error status
    static Result error(std::string message) { return Result(Status::error(std::move(message))); }

    bool is_ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return is_ok(); }
    T& value() & { return std::get<T>(v_); }
    const T& value() const& { return std::get<T>(v_); }
    T&& value() && { return std::get<T>(std::move(v_)); }
    T* operator->() { return &std::get<T>(v_); }
    const T* operator->() const { return &std::get<T>(v_); }
    T& operator*() & { return value(); }
    const std::string& message() const { return std::get<Status>(v_).message(); }
    Status status() const { return is_ok() ? Status::ok() : std::get<Status>(v_); }

private:
    std::variant<T, Status> v_;
};

// Thrown only at the boundaries docs/style.md §3 names (main, worker top, command handler) to carry a Status.
struct Error : std::exception {
    explicit Error(std::string m) : message(std::move(m)) {}
    const char* what() const noexcept override { return message.c_str(); }
    std::string message;
};

// Unwraps a Result or throws tw::Error with its message; for use at the boundaries.
template <class T>
T unwrap(Result<T> r) {
    if (!r) throw Error(r.message());
    return std::move(r).value();
}
inline void check(const Status& s) {
    if (!s) throw Error(s.message());
}

}  // namespace tw

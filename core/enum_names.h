// An enum's stable names, read both ways from one table: names reach configs, the DB and metric
// names, so each enum lists every value once with its name, in the order of the values. The
// tables are constexpr; a table that misses a value, or lists them out of order, fails to compile
// at the static_assert its header puts beside it (enum_table_complete).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace tw {

template <class E>
struct EnumName {
    E value;
    const char* name;
};

// True when `table` lists values 0..N−1 in order: with N the enum's count, every value is named.
template <class E, size_t N>
constexpr bool enum_table_complete(const EnumName<E> (&table)[N]) {
    for (size_t i = 0; i < N; ++i)
        if (static_cast<size_t>(table[i].value) != i) return false;
    return true;
}

// The name of `v`; "unknown" for a value outside the table (a byte read from outside).
template <class E, size_t N>
constexpr const char* enum_name(const EnumName<E> (&table)[N], E v) {
    for (const auto& e : table)
        if (e.value == v) return e.name;
    return "unknown";
}

// The value named `s`; nullopt for a name no value has.
template <class E, size_t N>
constexpr std::optional<E> enum_value(const EnumName<E> (&table)[N], std::string_view s) {
    for (const auto& e : table)
        if (s == e.name) return e.value;
    return std::nullopt;
}

}  // namespace tw

// Always-on assertion for programmer errors: prints file and line, then aborts.
#pragma once

#include <cstdio>
#include <cstdlib>

#define TW_ASSERT(cond)                                                                         \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            std::fprintf(stderr, "%s:%d: TW_ASSERT(%s) failed\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                       \
        }                                                                                       \
    } while (0)

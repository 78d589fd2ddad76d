// A micro run configuration shared by the engine tests: 2 layers of width 32, 16-token windows.
#pragma once

#include "core/config.h"

namespace tw::testing_support {

inline RunConfig micro_run(int64_t vocab_size, int64_t steps) {
    RunConfig c;
    c.model.vocab_size = vocab_size;
    c.model.d_model = 32;
    c.model.n_layer = 2;
    c.model.n_head = 2;
    c.model.seq_len = 16;
    c.train.batch_size = 4;
    c.train.steps = steps;
    c.train.warmup_steps = 2;
    c.run.threads = 1;
    return c;
}

}  // namespace tw::testing_support

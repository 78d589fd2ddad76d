// A test's side of the control protocol: one request to a node server over a DEALER, its reply
// decoded (remote/protocol.h). Header-only; for tests only.
#pragma once

#include <gtest/gtest.h>

#include <iterator>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "remote/protocol.h"

namespace tw {

// Sends `frames` (a message, or junk) on `dealer` and returns the decoded reply; a reply that does
// not come within the socket's receive timeout, or does not decode, fails the calling test.
inline Result<Message> request_frames(zmq::socket_t& dealer, std::vector<zmq::message_t> frames) {
    for (size_t i = 0; i < frames.size(); ++i)
        dealer.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    std::vector<zmq::message_t> reply;
    EXPECT_TRUE(zmq::recv_multipart(dealer, std::back_inserter(reply)));
    auto back = decode(reply);
    EXPECT_TRUE(back) << back.message();
    return back;
}

// Sends `kind` with `body` on `dealer`; the reply as request_frames gives it.
inline Result<Message> request_node(zmq::socket_t& dealer, MsgKind kind, nlohmann::json body) {
    Message m;
    m.kind = kind;
    m.body = std::move(body);
    return request_frames(dealer, encode(m));
}

}  // namespace tw

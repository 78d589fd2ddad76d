// The event rate limit: a flood is stored as its first events and one count per window.
#include <gtest/gtest.h>

#include "core/event_throttle.h"

namespace tw {
namespace {

EventRecord ev(const std::string& node, const std::string& kind, const std::string& text) {
    return {0, node, EventLevel::kWarning, kind, text};
}

// 2,000 junk frames within a second: 5 stored as they are, then one summary with the other 1,995.
TEST(EventThrottle, AFloodBecomesItsFirstEventsAndOneCount) {
    EventThrottle t(10.0, 5);
    size_t kept = 0;
    for (int i = 0; i < 2000; ++i) kept += t.admit(ev("replica-0", "dropped-frame", "junk " + std::to_string(i)), i * 0.0005).size();
    EXPECT_EQ(kept, 5u);
    EXPECT_TRUE(t.flush(5.0).empty());  // the window has not ended
    const auto s = t.flush(10.0);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].node, "replica-0");
    EXPECT_EQ(s[0].kind, "dropped-frame");
    EXPECT_EQ(s[0].text, "1995 more \"dropped-frame\" events from replica-0 within 10 s, not stored one by one; the last: junk 1999");
    EXPECT_EQ(t.held_back(), 1995u);
    EXPECT_TRUE(t.flush(100.0).empty());  // counted once
}

// A rare event of another kind or node passes while a flood is held back.
TEST(EventThrottle, OtherKindsAndNodesPassDuringAFlood) {
    EventThrottle t(10.0, 2);
    for (int i = 0; i < 50; ++i) (void)t.admit(ev("replica-0", "dropped-frame", "junk"), 1.0);
    EXPECT_EQ(t.admit(ev("replica-0", "node-lost", "lost"), 1.0).size(), 1u);
    EXPECT_EQ(t.admit(ev("replica-1", "dropped-frame", "junk"), 1.0).size(), 1u);
    EXPECT_EQ(t.held_back(), 48u);
}

// The next window starts with the previous one's summary, then passes its own burst again.
TEST(EventThrottle, ANewWindowReportsThePreviousAndPassesAgain) {
    EventThrottle t(10.0, 1);
    EXPECT_EQ(t.admit(ev("n", "refused", "a"), 0.0).size(), 1u);
    EXPECT_TRUE(t.admit(ev("n", "refused", "b"), 1.0).empty());
    EXPECT_TRUE(t.admit(ev("n", "refused", "c"), 2.0).empty());
    const auto next = t.admit(ev("n", "refused", "d"), 12.0);
    ASSERT_EQ(next.size(), 2u);
    EXPECT_EQ(next[0].text, "2 more \"refused\" events from n within 10 s, not stored one by one; the last: c");
    EXPECT_EQ(next[1].text, "d");
    // A window with nothing held back ends without a summary.
    EXPECT_TRUE(t.flush(30.0).empty());
}

}  // namespace
}  // namespace tw

// The user behind a local TCP connection (remote/peer_user.h): the row of the kernel's table whose
// local end is the peer and remote end is this socket, and a real loopback connection's owner.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "remote/peer_user.h"

namespace tw {
namespace {

TEST(PeerUser, TheRowWhoseLocalEndIsThePeerGivesItsUid) {
    const std::string table =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:15B3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 11 1\n"
        "   1: 0100007F:15B3 0100007F:9426 01 00000000:00000000 00:00000000 00000000     0        0 12 1\n"
        "   2: 0100007F:9426 0100007F:15B3 01 00000000:00000000 00:00000000 00000000 65534        0 13 1\n";
    // This node's socket is 127.0.0.1:5555 (0x15B3); the peer is 127.0.0.1:37926 (0x9426).
    EXPECT_EQ(uid_in_table(table, "0100007F:9426", "0100007F:15B3"), std::optional<uid_t>(65534));
    EXPECT_EQ(uid_in_table(table, "0100007F:15B3", "0100007F:9426"), std::optional<uid_t>(0));
    EXPECT_EQ(uid_in_table(table, "0100007F:1111", "0100007F:15B3"), std::nullopt);
    EXPECT_EQ(uid_in_table("header only\n", "0100007F:9426", "0100007F:15B3"), std::nullopt);
}

TEST(PeerUser, ALoopbackConnectionOfThisProcessIsOfThisUser) {
    const int srv = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(srv, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t n = sizeof a;
    ASSERT_EQ(getsockname(srv, reinterpret_cast<sockaddr*>(&a), &n), 0);
    ASSERT_EQ(listen(srv, 1), 0);
    const int cli = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(cli, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const int acc = accept(srv, nullptr, nullptr);
    ASSERT_GE(acc, 0);
    EXPECT_EQ(tcp_peer_uid(acc), std::optional<uid_t>(geteuid()));
    EXPECT_EQ(tcp_peer_uid(srv), std::nullopt) << "a listening socket has no peer";
    close(acc), close(cli), close(srv);
}

}  // namespace
}  // namespace tw

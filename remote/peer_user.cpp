#include "remote/peer_user.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tw {
namespace {

// The kernel's form of an address: the address bytes as 32-bit words in host order, in hex, then
// ":PORT" in hex.
std::string proc_form(const sockaddr_storage& a) {
    char buf[64];
    if (a.ss_family == AF_INET) {
        const auto& s = reinterpret_cast<const sockaddr_in&>(a);
        std::snprintf(buf, sizeof buf, "%08X:%04X", static_cast<unsigned>(s.sin_addr.s_addr), ntohs(s.sin_port));
        return buf;
    }
    const auto& s = reinterpret_cast<const sockaddr_in6&>(a);
    std::string out;
    for (int w = 0; w < 4; ++w) {
        uint32_t word;
        std::memcpy(&word, s.sin6_addr.s6_addr + 4 * w, 4);
        std::snprintf(buf, sizeof buf, "%08X", static_cast<unsigned>(word));
        out += buf;
    }
    std::snprintf(buf, sizeof buf, ":%04X", ntohs(s.sin6_port));
    return out + buf;
}

}  // namespace

std::optional<uid_t> uid_in_table(const std::string& table, const std::string& peer, const std::string& self) {
    std::istringstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string sl, local, remote, st, queues, timer, retr;
        long long uid = -1;
        if (!(f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid)) continue;
        if (local == peer && remote == self && uid >= 0) return static_cast<uid_t>(uid);
    }
    return std::nullopt;
}

std::optional<uid_t> tcp_peer_uid(int fd) {
    sockaddr_storage self{}, peer{};
    socklen_t ns = sizeof self, np = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &ns) != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &np) != 0)
        return std::nullopt;
    if ((self.ss_family != AF_INET && self.ss_family != AF_INET6) || self.ss_family != peer.ss_family) return std::nullopt;
    std::ifstream t(self.ss_family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6");
    if (!t) return std::nullopt;
    std::stringstream text;
    text << t.rdbuf();
    return uid_in_table(text.str(), proc_form(peer), proc_form(self));
}

}  // namespace tw

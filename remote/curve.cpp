// CurveZMQ keys, socket setup and the ZAP handler; see curve.h.
#include "remote/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <zmq.hpp>

#include "remote/poll.h"

namespace tw {
namespace {

constexpr const char* kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Reads a small key file whole; refuses anything larger than a key with a comment.
Result<std::string> read_key_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return Result<std::string>::error("key file " + path + ": cannot open (" + std::strerror(errno) + ")");
    std::string text(4097, '\0');
    f.read(text.data(), 4097);
    text.resize(static_cast<size_t>(f.gcount()));
    if (text.size() > 4096) return Result<std::string>::error("key file " + path + ": larger than a key file");
    // Lines starting with '#' are comments (keys written by `thinwire keys new` carry one).
    std::istringstream in(text);
    std::string line, key;
    while (std::getline(in, line)) {
        line = trim(line);
        if (line.empty() || line[0] == '#') continue;
        if (!key.empty()) return Result<std::string>::error("key file " + path + ": more than one key");
        key = line;
    }
    if (!is_z85_key(key))
        return Result<std::string>::error("key file " + path + ": not a 40-character Z85 CurveZMQ key");
    return key;
}

Status write_file(const std::string& path, const std::string& text, mode_t mode) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        if (errno == EEXIST) return Status::error(path + " exists; refusing to overwrite a key");
        return Status::error("cannot create " + path + ": " + std::strerror(errno));
    }
    const ssize_t n = ::write(fd, text.data(), text.size());
    const bool ok = n == static_cast<ssize_t>(text.size()) && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) return Status::error("cannot write " + path + ": " + std::strerror(errno));
    return Status::ok();
}

}  // namespace

bool curve_available() { return zmq_has("curve") != 0; }

bool is_z85_key(const std::string& s) {
    if (s.size() != kZ85KeyChars) return false;
    for (char c : s)
        if (!std::strchr(kZ85Alphabet, c) || c == '\0') return false;
    // A Z85 key decodes to 32 bytes; the text must be decodable.
    uint8_t raw[32];
    return zmq_z85_decode(raw, s.c_str()) != nullptr;
}

Result<CurveKeyPair> curve_keypair_new() {
    if (!curve_available()) return Result<CurveKeyPair>::error("this libzmq was built without CURVE");
    char pub[41] = {}, sec[41] = {};
    if (zmq_curve_keypair(pub, sec) != 0)
        return Result<CurveKeyPair>::error(std::string("zmq_curve_keypair: ") + zmq_strerror(zmq_errno()));
    return CurveKeyPair{pub, sec};
}

Status write_keypair(const std::string& dir, const CurveKeyPair& keys) {
    std::error_code ec;
    const auto parent = std::filesystem::path(dir).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return Status::error("cannot create " + dir + ": " + std::strerror(errno));
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return Status::error(dir + " is not a directory");
    const std::string sec = dir + "/secret.key", pub = dir + "/public.key";
    if (::access(sec.c_str(), F_OK) == 0 || ::access(pub.c_str(), F_OK) == 0)
        return Status::error(dir + " already holds a key; refusing to overwrite it");
    if (Status s = write_file(sec, "# thinwire CurveZMQ secret key: keep it on this machine\n" + keys.secret_key + "\n",
                              0600);
        !s)
        return s;
    return write_file(pub, "# thinwire CurveZMQ public key\n" + keys.public_key + "\n", 0644);
}

Result<CurveKeyPair> read_secret_key(const std::string& path) {
    using R = Result<CurveKeyPair>;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return R::error("key file " + path + ": " + std::strerror(errno));
    if ((st.st_mode & 0077) != 0)
        return R::error("secret key file " + path + " is readable by others (mode " +
                        std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                        std::to_string(st.st_mode & 7) + "); chmod 600 it");
    auto sec = read_key_text(path);
    if (!sec) return sec.status();
    char pub[41] = {};
    if (zmq_curve_public(pub, sec->c_str()) != 0) return R::error("key file " + path + ": not a CurveZMQ secret key");
    return CurveKeyPair{pub, *sec};
}

Result<std::string> read_public_key(const std::string& path) { return read_key_text(path); }

Result<std::string> public_key_from_text_or_file(const std::string& text_or_path) {
    // A readable file first: a path of exactly 40 characters is also made of Z85's alphabet.
    if (::access(text_or_path.c_str(), R_OK) == 0) return read_public_key(text_or_path);
    if (is_z85_key(text_or_path)) return text_or_path;
    return Result<std::string>::error("\"" + text_or_path +
                                      "\" is neither a 40-character Z85 public key nor a readable key file");
}

void curve_server(zmq::socket_t& s, const CurveKeyPair& own, const char* zap_domain) {
    s.set(zmq::sockopt::curve_server, 1);
    s.set(zmq::sockopt::curve_secretkey, own.secret_key);
    s.set(zmq::sockopt::zap_domain, zap_domain);
}

void curve_client(zmq::socket_t& s, const CurveKeyPair& own, const std::string& server_public_key) {
    s.set(zmq::sockopt::curve_serverkey, server_public_key);
    s.set(zmq::sockopt::curve_publickey, own.public_key);
    s.set(zmq::sockopt::curve_secretkey, own.secret_key);
}

std::string peer_key(const zmq::message_t& m) {
    const char* v = zmq_msg_gets(const_cast<zmq_msg_t*>(m.handle()), "User-Id");
    return v ? std::string(v) : std::string();
}

std::string key_tag(const std::string& key) { return key.empty() ? "(none)" : key.substr(0, 8) + "…"; }

Result<std::unique_ptr<ZapHandler>> ZapHandler::start(std::shared_ptr<zmq::context_t> ctx, Log log) {
    std::unique_ptr<ZapHandler> z(new ZapHandler());
    z->ctx_ = std::move(ctx);
    z->log_ = std::move(log);
    try {
        z->rep_ = std::make_unique<zmq::socket_t>(*z->ctx_, zmq::socket_type::rep);
        z->rep_->set(zmq::sockopt::linger, 0);
        z->rep_->bind("inproc://zeromq.zap.01");
    } catch (const zmq::error_t& e) {
        return Result<std::unique_ptr<ZapHandler>>::error(std::string("cannot start the ZAP handler: ") + e.what());
    }
    ZapHandler* raw = z.get();
    z->serving_.start([raw] { raw->serve(); });
    return z;
}

ZapHandler::~ZapHandler() {
    serving_.stop();
}

void ZapHandler::allow(const std::string& domain, std::vector<std::string> keys) {
    std::lock_guard<std::mutex> lock(mu_);
    allowed_[domain] = std::set<std::string>(keys.begin(), keys.end());
}

// ZAP 1.0 (RFC 27): request = version, request id, domain, address, identity, mechanism,
// credentials...; reply = version, request id, status code, status text, user id, metadata.
void ZapHandler::serve() {
    while (!serving_.stopping()) {
        if (!poll_in(*rep_, 100)) continue;
        std::vector<zmq::message_t> req;
        for (;;) {
            zmq::message_t part;
            if (!rep_->recv(part, zmq::recv_flags::dontwait)) break;
            const bool more = part.more();
            req.push_back(std::move(part));
            if (!more) break;
        }
        auto str = [&](size_t i) { return i < req.size() ? req[i].to_string() : std::string(); };
        std::string code = "400", text = "malformed ZAP request", user;
        if (req.size() >= 6 && str(0) == "1.0") {
            const std::string domain = str(2), address = str(3), mechanism = str(5);
            if (mechanism == "CURVE" && req.size() >= 7 && req[6].size() == 32) {
                char z85[41] = {};
                zmq_z85_encode(z85, static_cast<const uint8_t*>(req[6].data()), 32);
                bool ok;
                {
                    std::lock_guard<std::mutex> lock(mu_);
                    auto it = allowed_.find(domain);
                    ok = it != allowed_.end() && it->second.count(z85) > 0;
                }
                if (ok) {
                    code = "200", text = "OK", user = z85;
                } else {
                    code = "400", text = "key not allowed";
                    ++refused_;
                    if (log_)
                        log_("refused a " + domain + " connection from " + address + " with unknown key " + z85);
                }
            } else {
                code = "400", text = "CURVE required";
                ++refused_;
                if (log_) log_("refused a " + domain + " connection from " + address + " without CURVE");
            }
        }
        const std::string parts[] = {"1.0", str(1), code, text, user, ""};
        for (size_t i = 0; i < 6; ++i)
            rep_->send(zmq::buffer(parts[i]), i + 1 < 6 ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
}

}  // namespace tw

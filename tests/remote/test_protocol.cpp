// The control protocol's error cases: every bad message gets an error reply naming the problem,
// and the node keeps serving afterwards.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "remote/node_server.h"
#include "remote/protocol.h"
#include "tests/remote/node_request.h"

namespace tw {
namespace {

std::vector<zmq::message_t> frames_of(const std::string& header) {
    std::vector<zmq::message_t> f;
    f.emplace_back(header.data(), header.size());
    return f;
}

TEST(Protocol, EncodeDecodeRoundTripKeepsBodyAndBlobs) {
    Message m;
    m.kind = MsgKind::kConfigure;
    m.body = {{"id", 7}, {"x", "y"}};
    m.blobs = {{1, 2, 3}, {}};
    auto back = decode(encode(m));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->kind, MsgKind::kConfigure);
    EXPECT_EQ(back->body["id"], 7);
    EXPECT_EQ(back->body["x"], "y");
    EXPECT_FALSE(back->body.contains("v"));
    ASSERT_EQ(back->blobs.size(), 2u);
    EXPECT_EQ(back->blobs[0], (std::vector<uint8_t>{1, 2, 3}));
}

TEST(Protocol, DecodeNamesEachProblem) {
    EXPECT_NE(decode(frames_of("{not json")).message().find("not valid JSON"), std::string::npos);
    EXPECT_NE(decode(frames_of("[1,2]")).message().find("not a JSON object"), std::string::npos);
    EXPECT_NE(decode(frames_of(R"({"v":1})")).message().find("no string \"kind\""), std::string::npos);
    EXPECT_NE(decode(frames_of(R"({"kind":"hello"})")).message().find("protocol version"), std::string::npos);
    EXPECT_NE(decode(frames_of(R"({"v":1,"kind":"launch"})")).message().find("unknown message kind \"launch\""),
              std::string::npos);
    EXPECT_NE(decode(frames_of(R"({"v":9,"kind":"hello"})")).message().find("protocol version 9 is not supported"),
              std::string::npos);
    const std::string big(2000, ' ');
    EXPECT_NE(decode(frames_of(R"({"v":1,"kind":"hello"})" + big), 1024).message().find("exceeds the limit of 1024"),
              std::string::npos);
}

// `levels` nested arrays around 1: [[[1]]] for 3.
std::string nested(size_t levels) { return std::string(levels, '[') + "1" + std::string(levels, ']'); }

TEST(Protocol, DecodeRefusesDeepNestingBeforeParsing) {
    // Regression: an "id" nested 100,000 levels deep used to kill the node (SIGSEGV, stack overflow).
    auto deep = decode(frames_of(R"({"v":1,"kind":"hello","id":)" + nested(100000) + "}"));
    ASSERT_FALSE(deep);
    EXPECT_NE(deep.message().find("malformed header: nested deeper than 32 levels"), std::string::npos)
        << deep.message();
    // The header object is one level: 31 more fit, 32 more do not.
    EXPECT_TRUE(decode(frames_of(R"({"v":1,"kind":"hello","id":)" + nested(31) + "}")));
    EXPECT_FALSE(decode(frames_of(R"({"v":1,"kind":"hello","id":)" + nested(32) + "}")));
    // Brackets inside strings are text, escaped quotes included; unbalanced closers do not hide openers.
    const std::string text(1000, '[');
    auto in_string = decode(frames_of(R"({"v":1,"kind":"hello","s":"\")" + text + R"(\\","t":"{{{"})"));
    ASSERT_TRUE(in_string) << in_string.message();
    EXPECT_EQ(in_string->body["s"].get<std::string>(), "\"" + text + "\\");
    EXPECT_NE(decode(frames_of("]]]]" + nested(40))).message().find("nested deeper"), std::string::npos);
}

NodeRole two_replica_role() {
    NodeRole r;
    r.name = "replica-1.1";
    r.replica = 1;
    r.replicas = 2;
    r.rank = 1;
    r.replica_nodes = 2;
    r.mesh_endpoints = {"inproc://a", "inproc://b"};
    r.mesh_rank = -1;
    r.mesh_token = 0x0123456789abcdefULL;
    r.grad_group = {"127.0.0.1", 4000, 1, 2};
    r.data_fingerprint = "0123456789abcdef:fedcba9876543210:00000000deadbeef";
    return r;
}

TEST(Protocol, RoleRoundTripAndRangeCheck) {
    NodeRole r = two_replica_role();
    auto back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->name, r.name);
    EXPECT_EQ(back->grad_group.port, 4000);
    EXPECT_EQ(back->mesh_token, r.mesh_token);
    EXPECT_EQ(back->mesh_endpoints, r.mesh_endpoints);
    EXPECT_EQ(back->data_fingerprint, r.data_fingerprint);
    // Without a data fingerprint (a role built by hand, an older coordinator): no check.
    auto bare = role_to_json(r);
    bare.erase("data_fingerprint");
    back = role_from_json(bare);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->data_fingerprint, "");
    // User shards have no tokenizer.
    r.data_fingerprint = "none:0000000000000000:ffffffffffffffff";
    back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->data_fingerprint, r.data_fingerprint);
    r.data_fingerprint = "0123456789abcdef:fedcba9876543210:00000000deadbeef";
    // With keys: one per mesh endpoint and one per gradient-group member.
    const std::string key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";  // libzmq's test vector
    r.mesh_keys = {key, key};
    r.grad_group.keys = {key, key};
    back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->mesh_keys, r.mesh_keys);
    EXPECT_EQ(back->grad_group.keys, r.grad_group.keys);
    auto j = role_to_json(r);
    j["rank"] = 5;
    EXPECT_NE(role_from_json(j).message().find("\"rank\" must be an integer in [0, 1] (got 5)"), std::string::npos)
        << role_from_json(j).message();
    j.erase("replica");
    EXPECT_NE(role_from_json(j).message().find("no \"replica\""), std::string::npos);
}

// The mesh's relayed members: ascending ranks of tcp:// members, in a keyed mesh; absent = none.
TEST(Protocol, RoleRelayedMembersRoundTripAndAreChecked) {
    NodeRole r = two_replica_role();
    const std::string key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";  // libzmq's test vector
    r.mesh_endpoints = {"tcp://10.0.0.1:7002", "tcp://10.0.0.2:7002", "inproc://c"};
    r.mesh_keys = {key, key, key};
    r.mesh_relayed = {0, 1};
    auto back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->mesh_relayed, r.mesh_relayed);
    auto j = role_to_json(r);
    j.erase("mesh_relayed");
    back = role_from_json(j);
    ASSERT_TRUE(back) << back.message();
    EXPECT_TRUE(back->mesh_relayed.empty());
    const std::pair<nlohmann::json, const char*> bad[] = {
        {nlohmann::json::array({1, 0}), "\"mesh_relayed[1]\" must be a mesh rank below 3, above the one before it"},
        {nlohmann::json::array({3}), "\"mesh_relayed[0]\" must be a mesh rank below 3"},
        {nlohmann::json::array({-1}), "\"mesh_relayed[0]\" must be a mesh rank below 3"},
        {nlohmann::json::array({"1"}), "\"mesh_relayed[0]\" must be an integer"},
        {nlohmann::json::array({2}), "names a member at inproc://c, not tcp://"},
        {nlohmann::json::array({0, 1, 2, 3}), "at most as many ranks as mesh_endpoints"},
        {nlohmann::json("0"), "must be an array"},
    };
    for (const auto& [value, want] : bad) {
        j = role_to_json(r);
        j["mesh_relayed"] = value;
        const auto res = role_from_json(j);
        ASSERT_FALSE(res) << value.dump();
        EXPECT_NE(res.message().find(want), std::string::npos) << res.message();
    }
    j = role_to_json(r);
    j["mesh_keys"] = nlohmann::json::array();
    EXPECT_NE(role_from_json(j).message().find("\"mesh_relayed\" needs \"mesh_keys\""), std::string::npos)
        << role_from_json(j).message();
}

// Run-scoped checkpoints: the folder is one plain path component, the step needs it.
TEST(Protocol, RoleCheckpointFieldsRoundTripAndStayInsideTheFolder) {
    NodeRole r = two_replica_role();
    auto back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->checkpoint_run, "");
    EXPECT_EQ(back->resume_step, -1);
    r.checkpoint_run = "run-12-0123abcd";
    r.resume_step = 480;
    back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->checkpoint_run, "run-12-0123abcd");
    EXPECT_EQ(back->resume_step, 480);
    for (const char* bad : {"..", ".", "../up", "a/b", "run 1"}) {
        auto j = role_to_json(r);
        j["checkpoint_run"] = bad;
        EXPECT_NE(role_from_json(j).message().find("\"checkpoint_run\""), std::string::npos) << bad;
    }
    auto j = role_to_json(r);
    j["checkpoint_run"] = "";
    EXPECT_NE(role_from_json(j).message().find("\"resume_step\" given without"), std::string::npos);
    // An older coordinator sends neither: a fresh start without checkpoints.
    j = role_to_json(two_replica_role());
    j.erase("checkpoint_run");
    j.erase("resume_step");
    back = role_from_json(j);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->resume_step, -1);
    EXPECT_EQ(back->rejoin_step, -1);
}

// A node process restarted after a scheduled kill rejoins at a round; it never also resumes.
TEST(Protocol, RoleRejoinStepRoundTripsAndExcludesResume) {
    NodeRole r = two_replica_role();
    r.rejoin_step = 30;
    auto back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->rejoin_step, 30);
    EXPECT_EQ(back->rejoin_origin_step, 0);
    r.rejoin_origin_step = 20;
    back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->rejoin_origin_step, 20);
    r.rejoin_origin_step = 40;  // a run resumed after the step the node rejoins at
    EXPECT_NE(role_from_json(role_to_json(r)).message().find("\"rejoin_origin_step\" after \"rejoin_step\""),
              std::string::npos);
    r.rejoin_origin_step = 0;
    auto j = role_to_json(r);
    j["rejoin_step"] = -5;
    EXPECT_NE(role_from_json(j).message().find("rejoin_step"), std::string::npos);
    r.checkpoint_run = "run-1-ab";
    r.resume_step = 20;
    EXPECT_NE(role_from_json(role_to_json(r)).message().find("\"rejoin_step\" and \"resume_step\" together"), std::string::npos);
}

// A node process restarted after a real loss rejoins when its peers admit it: never at a given
// step, never resuming; its replica's tokens so far travel beyond 32 bits.
TEST(Protocol, RoleRejoinLiveRoundTripsAndExcludesAGivenStep) {
    NodeRole r = two_replica_role();
    auto back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->rejoin_live_from, -1);
    r.rejoin_live_from = 250;
    r.rejoin_tokens = int64_t{5} << 32;
    back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->rejoin_live_from, 250);
    EXPECT_EQ(back->rejoin_tokens, int64_t{5} << 32);
    EXPECT_EQ(back->rejoin_wall_ms, 0);
    r.rejoin_wall_ms = 12345;  // its wall clock counts from the run's start
    back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->rejoin_wall_ms, 12345);
    // The configure's transit (a fresh process reads it once started) counts, up to a minute; a
    // receiving clock behind the sender's counts nothing.
    r.rejoin_sent_unix_ms = 1'000'000;
    auto sent = role_from_json(role_to_json(r));
    ASSERT_TRUE(sent) << sent.message();
    EXPECT_EQ(sent->rejoin_sent_unix_ms, 1'000'000);
    EXPECT_EQ(sent->rejoin_age_ms(1'001'500), 12345 + 1500);
    EXPECT_EQ(sent->rejoin_age_ms(999'000), 12345);
    EXPECT_EQ(sent->rejoin_age_ms(5'000'000), 12345 + 60'000);
    r.rejoin_sent_unix_ms = 0;
    auto j = role_to_json(r);
    j["rejoin_wall_ms"] = int64_t{400} * 24 * 3600 * 1000;
    EXPECT_NE(role_from_json(j).message().find("\"rejoin_wall_ms\" must be an integer"), std::string::npos);
    j = role_to_json(r);
    j["rejoin_tokens"] = -1;
    EXPECT_NE(role_from_json(j).message().find("\"rejoin_tokens\" must be an integer"), std::string::npos);
    j = role_to_json(r);
    j["rejoin_live_from"] = "250";
    EXPECT_NE(role_from_json(j).message().find("\"rejoin_live_from\" must be an integer"), std::string::npos);
    r.rejoin_step = 260;
    EXPECT_NE(role_from_json(role_to_json(r)).message().find("\"rejoin_live_from\" with \"rejoin_step\" or \"resume_step\""),
              std::string::npos);
}

// Each mutation of a valid role is refused with an error naming the field.
TEST(Protocol, RoleFromJsonNamesEveryBadField) {
    const std::string key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
    const nlohmann::json good = role_to_json(two_replica_role());
    ASSERT_TRUE(role_from_json(good));
    struct Case {
        std::function<void(nlohmann::json&)> mutate;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {[](auto& j) { j["name"] = ""; }, "\"name\" is empty"},
        {[](auto& j) { j["name"] = std::string(65, 'a'); }, "\"name\" is 65 characters long (at most 64)"},
        {[](auto& j) { j["name"] = "replica 0"; }, "\"name\" may hold only"},
        {[](auto& j) { j["name"] = "../etc"; }, "\"name\" may hold only"},
        {[](auto& j) { j["name"] = 7; }, "\"name\" must be a string"},
        {[](auto& j) { j["kind"] = "evil"; }, "\"kind\" must be \"full\", \"pipeline\", \"skippipe\", \"expert\" or \"spare\""},
        // get<int>() would have truncated 1.5 to 1 and wrapped 2^32 + 1 to 1.
        {[](auto& j) { j["replica"] = 1.5; }, "\"replica\" must be an integer"},
        {[](auto& j) { j["replicas"] = 4294967297LL; }, "\"replicas\" must be an integer in [1, 65535]"},
        {[](auto& j) { j["replicas"] = 18446744073709551615ULL; }, "\"replicas\" must be an integer in [1, 65535]"},
        {[](auto& j) { j["replicas"] = 0; }, "\"replicas\""},
        {[](auto& j) { j["replica"] = 2; }, "\"replica\" must be an integer in [0, 1]"},
        {[](auto& j) { j["replica_nodes"] = "2"; }, "\"replica_nodes\" must be an integer"},
        {[](auto& j) { j["replica_nodes"] = 40000; }, "\"replicas\" × \"replica_nodes\" = 80000 nodes"},
        {[](auto& j) { j["stage"] = -2; }, "\"stage\" must be an integer in [-1, 1]"},
        {[](auto& j) { j["mesh_endpoints"] = "inproc://a"; }, "\"mesh_endpoints\" must be an array"},
        {[](auto& j) { j["mesh_endpoints"][1] = "http://b"; }, "\"mesh_endpoints[1]\" must start with"},
        {[](auto& j) { j["mesh_endpoints"][0] = 3; }, "\"mesh_endpoints[0]\" must be a string"},
        {[](auto& j) { j["mesh_endpoints"][0] = "tcp://" + std::string(300, 'h'); },
         "\"mesh_endpoints[0]\" is longer than 256"},
        {[](auto& j) { j["mesh_rank"] = 2; }, "\"mesh_rank\" must be an integer in [-1, 1]"},
        {[&](auto& j) { j["mesh_keys"] = {key}; }, "\"mesh_keys\" has 1 keys for 2 members"},
        {[&](auto& j) { j["mesh_keys"] = {key, "not-a-key"}; }, "\"mesh_keys[1]\""},
        {[](auto& j) { j["mesh_token"] = "0123456789ABCDEF"; }, "\"mesh_token\": expected 16 lower-case hex"},
        {[](auto& j) { j["mesh_token"] = 12; }, "\"mesh_token\" must be a string"},
        {[](auto& j) { j["data_fingerprint"] = 7; }, "\"data_fingerprint\" must be a string"},
        {[](auto& j) { j["data_fingerprint"] = std::string(51, 'a'); }, "\"data_fingerprint\" is 51 characters long"},
        {[](auto& j) { j["data_fingerprint"] = "0123456789abcdef:fedcba9876543210"; },
         "\"data_fingerprint\": expected"},
        {[](auto& j) { j["data_fingerprint"] = "0123456789ABCDEF:fedcba9876543210:00000000deadbeef"; },
         "\"data_fingerprint\": expected TOKENIZER:TRAIN:VAL"},
        {[](auto& j) { j["data_fingerprint"] = "0123456789abcdef:fedcba9876543210:00000000deadbee:"; },
         "\"data_fingerprint\": expected"},
        {[](auto& j) { j["data_fingerprint"] = "nope:fedcba9876543210:00000000deadbeef"; },
         "\"data_fingerprint\": expected"},
        {[](auto& j) { j["grad_group"] = nlohmann::json::array(); }, "\"grad_group\" must be an object"},
        {[](auto& j) { j["grad_group"]["host"] = std::string(254, 'h'); }, "\"grad_group.host\" is 254 characters"},
        {[](auto& j) { j["grad_group"]["port"] = 65536; }, "\"grad_group.port\" must be an integer in [0, 65535]"},
        {[](auto& j) { j["grad_group"]["size"] = 0; }, "\"grad_group.size\""},
        {[](auto& j) { j["grad_group"]["rank"] = 2; }, "\"grad_group.rank\" must be an integer in [0, 1]"},
        {[&](auto& j) { j["grad_group"]["keys"] = {key, key, key}; }, "\"grad_group.keys\" has 3 keys for 2"},
        {[](auto& j) { j["grad_group"].erase("port"); }, "no \"grad_group.port\""},
    };
    for (const auto& c : cases) {
        nlohmann::json j = good;
        c.mutate(j);
        auto r = role_from_json(j);
        ASSERT_FALSE(r) << "accepted " << j.dump();
        EXPECT_NE(r.message().find(c.expect), std::string::npos) << r.message() << "\n  expected: " << c.expect;
    }
}

// An HDEE expert's role carries its place in the plan; a bad one is refused naming the field.
TEST(Protocol, ExpertRoleRoundTripAndRangeCheck) {
    NodeRole r;
    r.name = "hetero_steps.learned";
    r.kind = NodeKind::kExpert;
    r.replica = 8;
    r.replicas = 9;
    r.expert_ensemble = 2;
    r.expert_domain = 2;
    r.expert_d_ff = 352;
    r.expert_steps = 156;
    auto back = role_from_json(role_to_json(r));
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->kind, NodeKind::kExpert);
    EXPECT_EQ(back->expert_ensemble, 2);
    EXPECT_EQ(back->expert_domain, 2);
    EXPECT_EQ(back->expert_d_ff, 352);
    EXPECT_EQ(back->expert_steps, 156);
    auto j = role_to_json(r);
    j["expert"]["ensemble"] = 3;
    EXPECT_NE(role_from_json(j).message().find("\"expert.ensemble\" must be an integer in [0, 2] (got 3)"),
              std::string::npos)
        << role_from_json(j).message();
    j = role_to_json(r);
    j["expert"]["steps"] = 0;
    EXPECT_NE(role_from_json(j).message().find("\"expert.steps\""), std::string::npos);
    j.erase("expert");
    EXPECT_NE(role_from_json(j).message().find("an expert needs an \"expert\" object"), std::string::npos);
    j = role_to_json(r);
    j["kind"] = "mystery";
    EXPECT_NE(role_from_json(j).message().find("\"kind\" must be \"full\", \"pipeline\", \"skippipe\", \"expert\" or \"spare\""),
              std::string::npos);
}

ExpertScores two_domain_scores() {
    ExpertScores s;
    s.seq_len = 3;
    s.sets = {{2, 1, 1, 1}, {1, 1, 1, 1}};
    s.unigram = 6.25;
    s.train_tokens = 1234;
    for (int i = 0; i < 15; ++i) s.logp.push_back(-0.125f * static_cast<float>(i));
    return s;
}

// The scores stream message through the wire (encode → frames → decode) keeps every value bit
// for bit; kind 17 is "scores".
TEST(Protocol, ScoresRoundTripThroughTheWire) {
    EXPECT_EQ(static_cast<int>(MsgKind::kScores), 17);
    EXPECT_STREQ(to_string(MsgKind::kScores), "scores");
    const ExpertScores s = two_domain_scores();
    const Message m = scores_message("homogeneous.news", s);
    auto frames = encode(m);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[1].size(), 15 * sizeof(float));
    auto dec = decode(frames);
    ASSERT_TRUE(dec) << dec.message();
    EXPECT_EQ(dec->kind, MsgKind::kScores);
    EXPECT_EQ(dec->body["name"], "homogeneous.news");
    auto back = scores_from_message(*dec);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->seq_len, 3);
    ASSERT_EQ(back->sets.size(), 2u);
    EXPECT_EQ(back->sets[0].eval_windows, 2);
    EXPECT_EQ(back->sets[1].prior_docs, 1);
    EXPECT_EQ(back->unigram, 6.25);
    EXPECT_EQ(back->train_tokens, 1234);
    EXPECT_EQ(back->logp, s.logp);
    EXPECT_TRUE(check_scores(*back, 2, 3)) << check_scores(*back, 2, 3).message();
}

// Every malformed scores message is refused with its reason, never read past its frame.
TEST(Protocol, ScoresFromMessageRefusesBadFrames) {
    const Message good = scores_message("n", two_domain_scores());
    ASSERT_TRUE(scores_from_message(good));
    struct Case {
        std::function<void(Message&)> mutate;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {[](Message& m) { m.blobs[0].pop_back(); }, "a frame of 59 bytes for 5 windows of 3 tokens"},
        {[](Message& m) { m.blobs[0].resize(64); }, "a frame of 64 bytes"},
        {[](Message& m) { m.blobs.clear(); }, "expected one binary frame of log-probabilities, got 0"},
        {[](Message& m) { m.blobs.push_back({}); }, "got 2"},
        {[](Message& m) { m.body["seq_len"] = 0; }, "\"seq_len\" must be an integer in [1, 1048576]"},
        {[](Message& m) { m.body["seq_len"] = 2.5; }, "\"seq_len\""},
        {[](Message& m) { m.body.erase("seq_len"); }, "\"seq_len\""},
        {[](Message& m) { m.body["sets"] = "x"; }, "\"sets\" must be an array"},
        {[](Message& m) { m.body["sets"][1] = {1, 1, 1}; }, "\"sets[1]\" must be [eval_windows"},
        {[](Message& m) { m.body["sets"][0][0] = -1; }, "\"sets[0]\""},
        {[](Message& m) { m.body["sets"][0][0] = int64_t{1} << 41; }, "\"sets[0]\""},
        {[](Message& m) { m.body["sets"][0][1] = uint64_t{1} << 63; }, "\"sets[0]\""},
        // windows beyond any message: refused before the product could overflow
        {[](Message& m) { m.body["sets"][0][0] = int64_t{1} << 40; m.body["seq_len"] = 1 << 20; },
         "windows of 1048576 tokens"},
        {[](Message& m) { m.body["unigram"] = "low"; }, "\"unigram\" must be a number"},
        {[](Message& m) { m.body["train_tokens"] = -5; }, "\"train_tokens\""},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        Message m = good;
        cases[i].mutate(m);
        auto r = scores_from_message(m);
        ASSERT_FALSE(r) << "case " << i << " accepted";
        EXPECT_NE(r.message().find(cases[i].expect), std::string::npos) << "case " << i << ": " << r.message();
        EXPECT_EQ(r.message().rfind("scores: ", 0), 0u) << r.message();
    }
    // Well formed, but not scores a run can use: core's check names the value.
    ExpertScores s = two_domain_scores();
    s.logp[4] = 0.25f;
    auto back = scores_from_message(scores_message("n", s));
    ASSERT_TRUE(back);
    EXPECT_NE(check_scores(*back, 2, 3).message().find("log-probability 4 is 0.250000 (must be finite and ≤ 0)"),
              std::string::npos)
        << check_scores(*back, 2, 3).message();
}

TEST(Protocol, MetricRowsAreTypeChecked) {
    auto ok = metrics_from_rows(nlohmann::json::parse(R"([[3, 1, 0.5, 2.0, "loss", null], [4, 1, 1, 2, "x", 7]])"), "n");
    ASSERT_TRUE(ok) << ok.message();
    ASSERT_EQ(ok->size(), 2u);
    EXPECT_EQ((*ok)[0].step, 3);
    EXPECT_TRUE(std::isnan((*ok)[0].value));
    EXPECT_EQ((*ok)[1].value, 7.0);
    auto bad = [](const char* rows) { return metrics_from_rows(nlohmann::json::parse(rows), "n").message(); };
    // A double step would have been truncated (and 1e300 is undefined behaviour as int64).
    EXPECT_NE(bad(R"([[1.5, 1, 0, 0, "x", 1]])").find("row 0: step is not a 64-bit integer"), std::string::npos);
    EXPECT_NE(bad(R"([[1, 1e300, 0, 0, "x", 1]])").find("outer_step is not a 64-bit integer"), std::string::npos);
    EXPECT_NE(bad(R"([[1, 18446744073709551615, 0, 0, "x", 1]])").find("outer_step"), std::string::npos);
    EXPECT_NE(bad(R"([[1, 1, 0, 0, "x", 1], [1, 1, "0", 0, "x", 1]])").find("row 1: wall_s"), std::string::npos);
    EXPECT_NE(bad(R"([[1, 1, 0, 0, 5, 1]])").find("name is not a string"), std::string::npos);
    EXPECT_NE(bad(R"([[1, 1, 0, 0, "x", "1"]])").find("value is not a number or null"), std::string::npos);
    EXPECT_NE(bad(R"([[1, 1, 0, 0, "x"]])").find("row 0 is not [step"), std::string::npos);
    EXPECT_NE(bad(R"({"a": 1})").find("not an array"), std::string::npos);
}

TEST(Protocol, NonLoopbackBindNeedsCurveKeys) {
    EXPECT_TRUE(check_bind_allowed("tcp://127.0.0.1:5555", false));
    EXPECT_TRUE(check_bind_allowed("inproc://x", false));
    EXPECT_NE(check_bind_allowed("tcp://0.0.0.0:5555", false).message().find("without CurveZMQ keys"),
              std::string::npos);
    EXPECT_TRUE(check_bind_allowed("tcp://10.1.2.3:5555", true));  // with keys any interface
    EXPECT_NE(check_bind_allowed("tcp://localhost:5555", false).message().find("use tcp://127.0.0.1"),
              std::string::npos);
    EXPECT_FALSE(NodeServer::bind({"tcp://0.0.0.0:5599"}, nullptr));
}

// A node on inproc:// with a message limit of max_bytes_ (64 KiB) and a factory that always refuses.
class NodeFixture : public ::testing::Test {
protected:
    void SetUp() override {
        ctx_ = std::make_shared<zmq::context_t>();
        NodeOptions o;
        o.listen = "inproc://proto-test";
        o.ctx = ctx_;
        o.max_message_bytes = max_bytes_;
        auto s = NodeServer::bind(o, [](const RunConfig&, const NodeRole&, const NodeSite&) {
            return Result<std::unique_ptr<Worker>>::error("no engine in this test");
        });
        ASSERT_TRUE(s) << s.message();
        server_ = std::move(*s);
        thread_ = std::thread([this] { (void)server_->serve(&stop_); });
        dealer_ = zmq::socket_t(*ctx_, zmq::socket_type::dealer);
        dealer_.set(zmq::sockopt::rcvtimeo, 5000);
        dealer_.connect("inproc://proto-test");
    }
    void TearDown() override {
        stop_ = true;
        thread_.join();
        dealer_.close();
    }
    nlohmann::json ask_raw(std::vector<zmq::message_t> frames) {
        auto m = request_frames(dealer_, std::move(frames));
        nlohmann::json j = m->body;
        j["kind"] = to_string(m->kind);
        return j;
    }
    nlohmann::json ask(MsgKind k, nlohmann::json body = nlohmann::json::object()) {
        Message m;
        m.kind = k;
        m.body = std::move(body);
        return ask_raw(encode(m));
    }

    size_t max_bytes_ = 64 * 1024;
    std::shared_ptr<zmq::context_t> ctx_;
    std::unique_ptr<NodeServer> server_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    zmq::socket_t dealer_;
};

TEST_F(NodeFixture, HelloReportsCapabilities) {
    auto caps = ask(MsgKind::kHello, {{"id", 1}});
    EXPECT_EQ(caps["kind"], "capabilities");
    EXPECT_EQ(caps["id"], 1);
    EXPECT_EQ(caps["protocol"], kProtocolVersion);
    EXPECT_GE(caps["threads"].get<int>(), 1);
    EXPECT_GT(caps["memory_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(caps["state"], "idle");
}

TEST_F(NodeFixture, BadMessagesGetErrorRepliesAndTheNodeKeepsServing) {
    auto e1 = ask_raw(frames_of("{garbage"));
    EXPECT_EQ(e1["kind"], "error");
    EXPECT_NE(e1["error"].get<std::string>().find("not valid JSON"), std::string::npos);
    auto e2 = ask_raw(frames_of(R"({"v":1,"kind":"explode"})"));
    EXPECT_NE(e2["error"].get<std::string>().find("unknown message kind \"explode\""), std::string::npos);
    auto e3 = ask_raw(frames_of(R"({"v":2,"kind":"hello"})"));
    EXPECT_NE(e3["error"].get<std::string>().find("protocol version 2"), std::string::npos);
    Message big;
    big.kind = MsgKind::kHello;
    big.blobs.push_back(std::vector<uint8_t>(100 * 1024, 7));
    auto e4 = ask_raw(encode(big));
    EXPECT_NE(e4["error"].get<std::string>().find("exceeds the limit of 65536 bytes"), std::string::npos);
    auto e5 = ask(MsgKind::kMetrics);
    EXPECT_NE(e5["error"].get<std::string>().find("does not accept \"metrics\""), std::string::npos);
    EXPECT_EQ(ask(MsgKind::kHello)["kind"], "capabilities");  // still serving
}

TEST_F(NodeFixture, CommandsOutOfOrderAndBadConfigAreErrors) {
    EXPECT_NE(ask(MsgKind::kStart)["error"].get<std::string>().find("start needs a configured node"), std::string::npos);
    EXPECT_NE(ask(MsgKind::kPause)["error"].get<std::string>().find("pause needs a running node"), std::string::npos);
    EXPECT_NE(ask(MsgKind::kConfigure, {{"role", {}}})["error"].get<std::string>().find("no config_toml"),
              std::string::npos);
    auto bad = ask(MsgKind::kConfigure, {{"config_toml", "[model]\nd_modle = 3\n"}, {"role", {}}});
    EXPECT_NE(bad["error"].get<std::string>().find("model.d_modle: unknown key"), std::string::npos);
    NodeRole r;
    r.name = "replica-0";
    auto refused = ask(MsgKind::kConfigure, {{"config_toml", ""}, {"role", role_to_json(r)}});
    EXPECT_NE(refused["error"].get<std::string>().find("no engine in this test"), std::string::npos);
    EXPECT_EQ(ask(MsgKind::kStatus)["state"], "idle");
}

// The same node with a 1 MiB limit, so big hostile headers reach the parser.
class BigNodeFixture : public NodeFixture {
protected:
    BigNodeFixture() { max_bytes_ = 1u << 20; }
};

TEST_F(BigNodeFixture, DeeplyNestedIdGetsAnErrorAndTheNodeKeepsServing) {
    // Regression: this header used to kill the node with SIGSEGV.
    auto e = ask_raw(frames_of(R"({"v":1,"kind":"hello","id":)" + nested(100000) + "}"));
    EXPECT_EQ(e["kind"], "error");
    EXPECT_NE(e["error"].get<std::string>().find("nested deeper than 32 levels"), std::string::npos) << e.dump();
    EXPECT_FALSE(e.contains("id"));
    EXPECT_EQ(ask(MsgKind::kHello, {{"id", 2}})["id"], 2);  // still serving
}

TEST_F(NodeFixture, NonIntegerIdIsAnErrorNamingId) {
    for (const char* id : {"[1]", "1.5", "\"7\"", "{\"a\":1}"}) {
        auto e = ask_raw(frames_of(std::string(R"({"v":1,"kind":"status","id":)") + id + "}"));
        EXPECT_EQ(e["kind"], "error") << id;
        EXPECT_NE(e["error"].get<std::string>().find("\"id\""), std::string::npos) << id << ": " << e.dump();
        EXPECT_FALSE(e.contains("id")) << id;  // a malformed id is not echoed
    }
    EXPECT_EQ(ask(MsgKind::kStatus, {{"id", 3}})["id"], 3);
}

TEST_F(NodeFixture, ConfigureWithBadHeartbeatNamesTheField) {
    NodeRole r;
    r.name = "replica-0";
    for (const nlohmann::json& hb : {nlohmann::json("abc"), nlohmann::json(nullptr), nlohmann::json(-1),
                                     nlohmann::json::array({1})}) {
        auto e = ask(MsgKind::kConfigure, {{"config_toml", ""}, {"role", role_to_json(r)}, {"heartbeat_s", hb}});
        EXPECT_EQ(e["kind"], "error") << hb.dump();
        EXPECT_NE(e["error"].get<std::string>().find("heartbeat_s"), std::string::npos) << hb.dump() << ": " << e.dump();
    }
    auto t = ask(MsgKind::kConfigure, {{"config_toml", ""}, {"role", role_to_json(r)}, {"heartbeat_timeout_s", "x"}});
    EXPECT_NE(t["error"].get<std::string>().find("heartbeat_timeout_s"), std::string::npos) << t.dump();
    EXPECT_EQ(ask(MsgKind::kStatus)["state"], "idle");
}

TEST_F(NodeFixture, ConfigureWithABadRoleNamesTheField) {
    nlohmann::json role = role_to_json(two_replica_role());
    role["grad_group"]["port"] = 70000.5;
    auto e = ask(MsgKind::kConfigure, {{"config_toml", ""}, {"role", role}});
    EXPECT_NE(e["error"].get<std::string>().find("configure: role: \"grad_group.port\""), std::string::npos) << e.dump();
    EXPECT_EQ(ask(MsgKind::kStatus)["state"], "idle");
}

// A node with a data root: a configure naming a path outside it is refused before the
// worker factory sees it, the node keeps serving, and an accepted one reaches the factory resolved
// under the root.
TEST(NodeDataRoot, PathsOutsideTheRootAreRefusedAndTheNodeKeepsServing) {
    namespace fs = std::filesystem;
    const fs::path base = fs::temp_directory_path() / ("tw-node-root-" + std::to_string(getpid()));
    fs::create_directories(base / "root");
    fs::create_directories(base / "outside");
    fs::create_directory_symlink(base / "outside", base / "root" / "out");
    const std::string root = fs::canonical(base / "root").string();

    auto ctx = std::make_shared<zmq::context_t>();
    NodeOptions o;
    o.listen = "inproc://proto-test-root";
    o.ctx = ctx;
    o.data_root = root;
    std::atomic<int> calls{0};
    std::string seen_corpus, seen_cache;  // written by the server thread before its reply
    auto s = NodeServer::bind(o, [&](const RunConfig& c, const NodeRole&, const NodeSite& site) {
        ++calls;
        seen_corpus = c.data.corpus;
        seen_cache = c.data.cache_dir;
        EXPECT_EQ(site.data_root, root);
        return Result<std::unique_ptr<Worker>>::error("stop here");
    });
    ASSERT_TRUE(s) << s.message();
    std::atomic<bool> stop{false};
    std::thread serving([&] { (void)(*s)->serve(&stop); });
    zmq::socket_t dealer(*ctx, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::rcvtimeo, 5000);
    dealer.connect(o.listen);
    auto ask = [&](MsgKind k, nlohmann::json body) {
        auto back = request_node(dealer, k, std::move(body));
        nlohmann::json j = back->body;
        j["kind"] = to_string(back->kind);
        return j;
    };
    NodeRole r;
    r.name = "replica-0";
    auto configure = [&](const std::string& toml) {
        auto j = ask(MsgKind::kConfigure, {{"config_toml", toml}, {"role", role_to_json(r)}});
        return j.contains("error") ? j["error"].get<std::string>() : std::string("(no error)");
    };
    EXPECT_EQ(configure("[data]\ncorpus = \"/etc/passwd\"\n"),
              "configure: data.corpus = \"/etc/passwd\": an absolute path; paths are relative to the node's data root");
    EXPECT_EQ(configure("[data]\ncorpus = \"../../etc/passwd\"\n"),
              "configure: data.corpus = \"../../etc/passwd\": leaves the data root (through \"..\" or a symbolic link)");
    EXPECT_NE(configure("[data]\ncache_dir = \"out\"\n").find("data.cache_dir = \"out\": leaves the data root"),
              std::string::npos);
    EXPECT_NE(configure("[train]\nckpt_path = \"/tmp/x.ckpt\"\n").find("train.ckpt_path = \"/tmp/x.ckpt\""),
              std::string::npos);
    EXPECT_EQ(calls.load(), 0) << "a refused configure reached the worker factory";
    EXPECT_EQ(ask(MsgKind::kHello, nlohmann::json::object())["kind"], "capabilities");  // still serving
    EXPECT_EQ(ask(MsgKind::kStatus, nlohmann::json::object())["state"], "idle");
    // Accepted: the factory gets the paths resolved under the root; the keyword corpus stays one.
    EXPECT_EQ(configure("[data]\ncorpus = \"texts/../corpus.txt\"\ncache_dir = \".cache/thinwire\"\n"),
              "configure: stop here");
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(seen_corpus, root + "/corpus.txt");
    EXPECT_EQ(seen_cache, root + "/.cache/thinwire");
    EXPECT_EQ(configure(""), "configure: stop here");
    EXPECT_EQ(seen_corpus, "brown");
    EXPECT_EQ(seen_cache, root);  // the default cache_dir "." is the root itself
    stop = true;
    serving.join();
    dealer.close();
    fs::remove_all(base);
}

}  // namespace
}  // namespace tw

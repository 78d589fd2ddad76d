// The replica worker's rounds that survive lost replicas (docs/faults.md); see replica_worker_impl.h.
#include "engine/worker/replica_worker_impl.h"

namespace tw::replica_impl {

Result<RoundReport> ReplicaWorker::elastic_round(int64_t step, std::vector<int>& late) {
    using R = Result<RoundReport>;
    const int me = role_.replica;
    ++rounds_;
    // The round's attempt numbers follow from its step, the same on every member: a joiner, a
    // restarted process or a spare knows them without having counted the rounds it missed.
    std::vector<int> members;
    for (int r : scheduled_members(step))
        if (!lost(r)) members.push_back(r);
    members = places_.by_rank(members);
    // A member of the last round that is gone now is noticed the way a real loss is: by waiting out
    // the heartbeat timeout. The simulated clock pays that wait once (docs/faults.md), so a
    // scheduled kill costs what a real one would.
    for (int r : last_round_) {
        if (std::find(members.begin(), members.end(), r) != members.end()) continue;
        clock_.wait_until(clock_.now_s() + cfg_.cluster.heartbeat_timeout_s);
        break;
    }
    last_round_ = members;
    const auto round_start = Clock::now();
    // What a redo starts from: the algorithm's state and the live weights as the round found them.
    auto params = trainer_->model()->parameters();
    const OuterState snapshot = outer_->save_state();
    std::vector<torch::Tensor> live_before;
    for (auto& p : params) live_before.push_back(p.detach().clone());
    for (int attempt = 0;; ++attempt) {
        if (static_cast<int64_t>(members.size()) < cfg_.cluster.min_replicas) {
            return R::error("quorum lost: " + std::to_string(members.size()) + " replica(s) left (" + replica_list(members) +
                            "), cluster.min_replicas is " + std::to_string(cfg_.cluster.min_replicas));
        }
        if (attempt >= 15) return R::error("the round was redone 15 times; giving up");
        enter_epoch(epoch_of(step, attempt));
        MemberView all(*mesh_, places_.ranks_of(members));
        std::vector<int> on_time = members;
        late.clear();
        RoundReport rep;
        double late_by = 0;
        std::vector<int> admit;
        Status st = admission(all, members, admit);
        if (st && cfg_.outer.round_deadline_s > 0) {
            // Arrivals: every member's clock, framing only (no payload bytes). Whoever arrives more
            // than the deadline after the first is left out; everyone computes the same split.
            std::vector<double> clocks;
            auto got = all.all_gather({}, LinkClass::kOuterSync, clock_.now_s(), &clocks);
            if (!got) {
                st = got.status();
            } else {
                const double first = *std::min_element(clocks.begin(), clocks.end());
                on_time.clear();
                for (size_t i = 0; i < members.size(); ++i) {
                    if (clocks[i] <= first + cfg_.outer.round_deadline_s) on_time.push_back(members[i]);
                    else late.push_back(members[i]);
                    if (members[i] == me) late_by = clocks[i] - first;
                }
            }
        }
        const bool in_round = std::find(on_time.begin(), on_time.end(), me) != on_time.end();
        if (st && in_round) {
            MemberView view(*mesh_, places_.ranks_of(on_time));
            auto r = outer_->after_step(step, view, clock_.now_s());
            if (!r) {
                st = r.status();
            } else {
                rep = std::move(*r);
                auto h = agree_on_round(*outer_, view);
                if (!h) st = h.status();
                else
                    rec_.record(step, metric::kRoundStateHash, static_cast<double>(*h >> 12));
                // The report's members are view ranks (NoLoCo's group) or none (all of the view);
                // replicas, ascending, from here on.
                if (!rep.members.empty()) {
                    for (int& m : rep.members) m = slot_of(view.base_rank(m));
                } else if (static_cast<int>(on_time.size()) < role_.replicas) {
                    rep.members = on_time;
                }
                std::sort(rep.members.begin(), rep.members.end());
            }
        } else if (st) {
            // Late: out of this round's aggregate; it applies the round through the donor's state
            // (catch_up) and its own pseudo-gradient of the round is dropped (docs/faults.md).
            rep.synced = true;
            rep.bytes_sent = 0;
            rep.hops = 0;
            rep.members = on_time;
            std::sort(rep.members.begin(), rep.members.end());
            rep.what = "left out: late";
            rec_.record(step, metric::kRoundLateS, late_by);
        }
        if (st) {
            if (!members_.empty() && members_ != members && me == members.front()) {
                rec_.info("members", "the round at step " + std::to_string(step) + " runs among replicas " +
                                         replica_list(members));
            }
            members_ = on_time;
            admitted_ = admit;
            if (attempt > 0 || static_cast<int64_t>(members.size()) < cfg_.outer.replicas) {
                rec_.record(step, metric::kRoundMembers, static_cast<double>(on_time.size()));
                rec_.record(step, metric::kRoundAttempts, static_cast<double>(attempt + 1));
            }
            if (attempt > 0) rec_.record(step, metric::kRoundLossWallS, seconds_since(round_start));
            if (!late.empty()) {
                if (me == on_time.front())
                    rec_.warn("late", "round at step " + std::to_string(step) + ": replica(s) " + replica_list(late) +
                                          " arrived more than " + num(cfg_.outer.round_deadline_s) +
                                          " simulated s after the first and were left out");
            }
            return rep;
        }
        // The attempt failed. A lost member: every survivor gives the attempt up and redoes it
        // among the others from the same state; any other error ends the run as before.
        if (ctl_ && ctl_->stop.load()) return st;
        std::vector<int> peers;
        for (int r : members)
            if (r != me) peers.push_back(r);
        mesh_->membership().abandon(places_.ranks_of(peers));
        std::vector<int> gone, rest, quit;
        for (int r : members) (lost(r) ? gone : rest).push_back(r);
        // A peer that gave the attempt up redoes it; so does this member, though it found nobody
        // lost: the peer counted in a member this one already knew lost (one heard the lost
        // member's last hash and took the previous round, the other took it from that peer).
        for (int r : rest)
            if (r != me && mesh_->membership().gave_up(places_.ranks_of({r}).front())) quit.push_back(r);
        if (gone.empty() && quit.empty()) return st;
        if (Status s = outer_->load_state(snapshot); !s) return R::error("rolling back the round: " + s.message());
        {
            torch::NoGradGuard no_grad;
            for (size_t i = 0; i < params.size(); ++i) params[i].copy_(live_before[i]);
        }
        if (gone.empty()) {
            rec_.info("member-lost", "round at step " + std::to_string(step) + ": replica " + replica_list(quit) +
                                         " gave the attempt up (" + st.message() +
                                         "); the round is redone among replicas " + replica_list(rest));
            continue;
        }
        rec_.warn("member-lost", "round at step " + std::to_string(step) + ": replica " + replica_list(gone) +
                                     " lost (" + st.message() + "); the round is redone among replicas " +
                                     replica_list(rest));
        members = rest;
        last_round_ = members;
        clock_.wait_until(clock_.now_s() + cfg_.cluster.heartbeat_timeout_s);  // the wait that found it lost
    }
}

Status ReplicaWorker::send_state(int to, int slot, int64_t step, double clock_s) {
    RecoveryState s;
    s.step = step;
    s.rounds = rounds_;
    s.clock_s = clock_s;
    s.members = members_;
    s.lost = mesh_->membership().lost_members();
    s.slot = slot;
    s.holders = places_.holders();
    s.outer = donor_state(*outer_, trainer_->model()->parameters());
    const auto bytes = encode_recovery(s);
    // Not counted on the link's round counters: recovery bytes are their own figure.
    if (Status st = mesh_->send(to, bytes, LinkClass::kOuterSync, clock_s, /*count=*/false); !st) return st;
    recovery_sent_ += bytes.size();
    const std::string whom = slot >= 0 ? "the spare at mesh rank " + std::to_string(to) + ", which takes replica " +
                                             std::to_string(slot) + "'s place"
                                       : "replica " + std::to_string(slot_of(to));
    rec_.info("recovery", "sent the state after the round at step " + std::to_string(step) + " to " + whom + ": " +
                              std::to_string(bytes.size()) + " B");
    return Status::ok();
}

std::vector<std::pair<int, int>> ReplicaWorker::refill(int64_t step) {
    if (cfg_.cluster.spares == 0 || places_.empty()) return {};
    // A place is free when its holder is lost, or killed with no rejoin; a replica away for a while
    // (disconnected, or killed and coming back) keeps its own.
    std::vector<int> free;
    for (int r = 0; r < role_.replicas; ++r)
        if (std::find(last_round_.begin(), last_round_.end(), r) == last_round_.end() &&
            (lost(r) || faults_.gone_for_good(r, step)))
            free.push_back(r);
    return places_.refill(free, [this](int k) { return rank_lost(k); });
}

Status ReplicaWorker::catch_up(int64_t step, double end_s, const std::vector<int>& late) {
    const int me = role_.replica;
    // Every member of the round computes the same refills (the same round, the same lost places).
    const auto spares = refill(step);
    std::vector<int> to = late;
    for (int r : faults_.rejoining(step))
        if (!lost(r)) to.push_back(r);
    // Restarted replicas admitted in this round: every member counts them in from the next round.
    const std::vector<int> admitted = std::exchange(admitted_, {});
    for (int r : admitted) mesh_->membership().forgive(rank_of(r));
    to.insert(to.end(), admitted.begin(), admitted.end());
    if (to.empty() && spares.empty()) return Status::ok();
    if (std::find(late.begin(), late.end(), me) != late.end()) return receive_state(step, members_, /*joining=*/false);
    if (members_.empty() || members_.front() != me) return Status::ok();
    for (int r : to) {
        // A replica rejoining by the schedule says when it is up (a restarted process takes a while);
        // an admitted one has said so already.
        if (std::find(late.begin(), late.end(), r) == late.end() &&
            std::find(admitted.begin(), admitted.end(), r) == admitted.end())
            if (Status st = mesh_->membership().wait_ready(rank_of(r), static_cast<uint64_t>(step)); !st) {
                if (lost(r)) continue;  // gone again: nobody to send to
                return Status::error(role_.name + ": waiting for replica " + std::to_string(r) + " to rejoin: " + st.message());
            }
        if (Status st = send_state(rank_of(r), -1, step, end_s); !st) return st;
    }
    for (auto [r, k] : spares)
        if (Status st = send_state(k, r, step, end_s); !st) return st;
    return Status::ok();
}

Status ReplicaWorker::rejoin_stages(int64_t back) {
    // Every slice's weights and outer state are replaced by replica 0's; AdamW starts afresh.
    trainer_->reset_optimizer();
    if (Status st = take_stage_states(back); !st) return st;
    trainer_->set_step_index(back);
    ctl_->step = back;
    return Status::ok();
}

Status ReplicaWorker::take_stage_states(int64_t step, int64_t live_from) {
    StageRecoveryParts parts{stage_rounds_.get(), t_fixed_, {}, nullptr};
    auto got = receive_stage_states(cfg_, role_.replica, step, *mesh_, net_, parts, live_from);
    if (!got) return Status::error(role_.name + ": rejoining: " + got.message());
    if (live_from >= 0) trainer_->set_step_index(got->step);
    recovery_recv_ += got->bytes;
    clock_.wait_until(got->ready_s);  // the state crosses replica 0's uplink and this node's downlink
    for (auto& text : got->texts) rec_.info("rejoin", text);
    return Status::ok();
}

Status ReplicaWorker::receive_state(int64_t step, const std::vector<int>& candidates, bool joining) {
    // The donor is the lowest of the round's members by mesh rank that is alive: wait for each in
    // that order, moving on when one is lost. recv_any over one peer has no backstop: a live donor
    // that has not reached the round yet is waited for as long as that takes.
    for (int d : places_.by_rank(candidates)) {
        if (d == role_.replica) continue;
        if (joining) {
            enter_epoch(epoch_of(step, 0));
            mesh_->membership().tell_ready(rank_of(d), static_cast<uint64_t>(step));
        }
        for (;;) {
            int from = -1;
            auto m = mesh_->recv_any({rank_of(d)}, &from);
            if (!m) {
                if (lost(d) && !(ctl_ && ctl_->stop.load())) break;  // the next candidate
                return Status::error(role_.name + ": waiting for the state of replica " + std::to_string(d) + ": " + m.message());
            }
            if (!is_recovery_message(*m)) continue;  // a message of an abandoned round
            auto s = decode_recovery(*m);
            if (!s) return Status::error(role_.name + ": the state from replica " + std::to_string(d) + ": " + s.message());
            if (s->step != step) continue;  // an older one
            return take_state(*s, m->size(), from);
        }
    }
    return Status::error(role_.name + ": no live replica sent the state after the round at step " + std::to_string(step));
}

Result<std::optional<ReplicaWorker::DonorMessage>> ReplicaWorker::state_from_anyone(
    const std::string& waiting, const std::pair<std::string, std::string>& gone) {
    using R = Result<std::optional<DonorMessage>>;
    const std::vector<int> peers = mesh_peers();
    for (;;) {
        int from = -1;
        auto m = mesh_->recv_any(peers, &from);
        if (!m) {
            if (ctl_ && ctl_->stop.load()) return m.status();
            bool all_gone = true;
            for (int k : peers) all_gone = all_gone && rank_lost(k);
            if (!all_gone) return R::error(role_.name + ": " + waiting + ": " + m.message());
            rec_.info(gone.first, gone.second);
            return std::optional<DonorMessage>();
        }
        if (!is_recovery_message(*m)) continue;  // a frame of a round (or sent to a predecessor)
        auto s = decode_recovery(*m);
        if (!s) return R::error(role_.name + ": the state from mesh rank " + std::to_string(from) + ": " + s.message());
        return std::optional<DonorMessage>(DonorMessage{std::move(*s), m->size(), from});
    }
}

Status ReplicaWorker::stand_by(bool& needed) {
    needed = false;
    rec_.info("standby", role_.name + " stands by to take the place of a replica lost for good");
    // The members' first round with this spare may reach it before the donor's state (another
    // member sends it, on another connection), many rounds ahead of this transport's: kept until
    // the state's round begins (receive_state's enter_epoch), not dropped as too far ahead.
    mesh_->membership().await_admission();
    // Nothing but a donor's state is sent to a spare (it is in no round), so any peer may send it.
    auto got = state_from_anyone("standing by",
                                 {"standby", role_.name + " was not needed: every other node has left the run"});
    if (!got || !*got) return got.status();
    const DonorMessage& d = **got;
    if (d.state.slot < 0)
        return Status::error(role_.name + ": mesh rank " + std::to_string(d.from) + " sent a spare state without a place to take");
    if (Status st = take_state(d.state, d.bytes, d.from); !st) return st;
    needed = true;
    return Status::ok();
}

Status ReplicaWorker::admission(MemberView& all, const std::vector<int>& members, std::vector<int>& admit) {
    admit.clear();
    if (cfg_.cluster.restart_lost == 0) return Status::ok();
    // Each member's mask of the absent replicas whose fresh process it has heard; a replica is
    // admitted when every member heard it, so all compute the same list (framing only, no bytes).
    uint64_t heard = 0;
    for (int r = 0; r < role_.replicas && r < 64; ++r)
        if (std::find(members.begin(), members.end(), r) == members.end() && mesh_->membership().heard_live(rank_of(r)))
            heard |= uint64_t{1} << r;
    std::vector<int> everyone(members.size());
    for (size_t i = 0; i < members.size(); ++i) everyone[i] = static_cast<int>(i);
    auto words = all.gather_words(everyone, heard);
    if (!words) return words.status();
    admit = admitted_by_every_word(*words, role_.replicas);
    return Status::ok();
}

Status ReplicaWorker::share_step_in_group(bool& joined) {
    auto step = torch::full({1}, joined ? trainer_->step_index() : int64_t{-1}, torch::kInt64);
    const auto t = Clock::now();
    if (Status st = grads_->broadcast({step}, 0); !st) return st;
    gloo_real_s_ += seconds_since(t);
    const int64_t at = step.item<int64_t>();
    joined = at >= 0;
    if (joined && !mesh_) trainer_->set_step_index(at);
    if (!joined && !mesh_) rec_.info("rejoin", role_.name + " did not rejoin: its leader did not");
    return Status::ok();
}

Status ReplicaWorker::rejoin_live(bool& joined) {
    joined = false;
    // Its transport starts at the round of the lowest step its peers had reported, a lower bound of
    // the one it joins after (a state message of an earlier attempt is never taken for one of a
    // later). Its peers may be many rounds further by the time they admit it (a process takes a
    // second to start, a round of a small model milliseconds): await_admission keeps their next
    // round's frames, which may come before the state, however far ahead they are.
    enter_epoch(epoch_of(role_.rejoin_live_from, 0));
    const std::vector<int> peers = mesh_peers();
    mesh_->membership().await_admission();  // after its first epoch: until the state's round begins
    for (int k : peers) mesh_->membership().tell_ready(k, Membership::kReadyLive);
    rec_.info("start",
              role_.name + ": a fresh process after a loss; it waits for its peers to admit it at a round boundary");
    for (;;) {
        auto got = state_from_anyone("waiting to rejoin",
                                     {"rejoin", role_.name + " did not rejoin: every other node had left the run"});
        if (!got || !*got) return got.status();
        const DonorMessage& d = **got;
        if (d.state.slot >= 0)
            return Status::error(role_.name + ": mesh rank " + std::to_string(d.from) + " offered a spare's place to a restarted replica");
        if (d.state.step < role_.rejoin_live_from) continue;  // sent to its predecessor
        if (Status st = take_state(d.state, d.bytes, d.from); !st) return st;
        trainer_->set_step_index(d.state.step);
        joined = true;
        return Status::ok();
    }
}

Status ReplicaWorker::rejoin_stages_live(bool& joined) {
    joined = false;
    rec_.info("start",
              role_.name + ": a fresh process after a loss; it waits for its peers to admit it at a round boundary");
    if (Status st = take_stage_states(-1, role_.rejoin_live_from); !st) {
        if (ctl_ && ctl_->stop.load()) return st;
        // Replica 0's node, which alone sends the state, has left or ended: nothing to join.
        rec_.warn("rejoin", role_.name + " did not rejoin: " + st.message());
        return Status::ok();
    }
    outer_step_ = stage_rounds_->rounds_done() - 1;  // the index of the round it was admitted at, as its peers count
    joined = true;
    return Status::ok();
}

Status ReplicaWorker::take_state(const RecoveryState& s, size_t bytes, int from) {
    const std::string where = role_.name + ": the state from mesh rank " + std::to_string(from) + ": ";
    // The places are checked before anything is taken on: they decide whom this node talks to.
    ReplicaPlaces next = places_;
    if (Status st = next.adopt(s.holders); !st) return Status::error(where + st.message());
    const int mine = s.slot >= 0 ? s.slot : role_.replica;
    if (s.slot >= 0 && !standby_) return Status::error(where + "offers replica " + std::to_string(s.slot) + "'s place to a node that holds one");
    if (next.rank_of(mine) != mesh_->rank())
        return Status::error(where + "gives replica " + std::to_string(mine) + "'s place to mesh rank " +
                             std::to_string(next.rank_of(mine)) + ", not this node's " + std::to_string(mesh_->rank()));
    places_ = std::move(next);
    if (s.slot >= 0) {
        // A spare becomes replica `slot`: its part of the data from the donor's step on, a fresh
        // optimizer, the replica's compute model; then the state like any joiner.
        role_.replica = s.slot;
        standby_ = false;
        auto compute = ComputeTime::create(cfg_, role_.replica);
        if (!compute) return Status::error(role_.name + ": " + compute.message());
        compute_ = *compute;
        outer_.reset();
        trainer_.reset();
        if (Status st = build_training(); !st) return st;
        trainer_->set_step_index(s.step);
        if (ctl_) ctl_->step = s.step;
    }
    auto params = trainer_->model()->parameters();
    if (Status st = apply_donor_state(*outer_, params, s.outer); !st) return Status::error(where + st.message());
    rounds_ = s.rounds;
    enter_epoch(epoch_of(s.step, 0));  // a spare's first: see receive_state
    members_ = s.members;
    last_round_ = s.members;
    for (int k : s.lost)
        if (k != mesh_->rank()) mesh_->membership().declare_lost(k);
    recovery_recv_ += bytes;
    // The state crosses the donor's uplink and this replica's downlink after the round's end.
    const int me = role_.replica, d = slot_of(from) < 0 ? me : slot_of(from);
    const LinkSpec link = round_link(net_, me, {std::min(d, me), std::max(d, me)}, 1);
    clock_.wait_until(s.clock_s + transfer_s(link, bytes));
    const std::string what = "the state after the round at step " + std::to_string(s.step) + " from replica " +
                             std::to_string(d) + ": " + std::to_string(bytes) + " B";
    if (s.slot >= 0)
        rec_.info("spare", role_.name + " takes replica " + std::to_string(s.slot) + "'s place with " + what);
    else
        rec_.info("rejoin", "took " + what);
    return Status::ok();
}

}  // namespace tw::replica_impl

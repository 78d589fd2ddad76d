// Who is in a member's rounds (docs/faults.md): the fault-tolerance half of the data plane, apart
// from the byte-moving half (core/collective.h). A transport that can lose members implements it
// (remote/zmq_collective.h, whose state machine is remote/mesh_membership.h); the others hand out
// `Membership::never_lost()`, whose answers are those of a run in which no member is ever lost.
//
// Ranks are the transport's (mesh members), never a MemberView's: a view translates with
// MemberView::base_ranks before it asks. Every call is the worker's own thread (the transport's).
//
// Who is lost is decided here only from what this member saw itself (silence, a bye, a restarted
// process's word) or from a member it still counts in, about its current attempt: a member counted
// lost — it may have been paused and judged its peers by its own stale clock — or an attempt
// already given up never decides who is in a round (fencing). The coordinator is the authority on
// who is in the run; a node it counted lost is told to stop and comes back only as a new
// incarnation (a restart, a spare, a rejoin).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace tw {

class Membership {
public:
    virtual ~Membership() = default;

    // Members this member found lost (silent past the heartbeat timeout, gone, or reported lost by
    // a peer that gave up an attempt), ascending; sticky until forgive().
    virtual std::vector<int> lost_members() const = 0;
    // Starts round attempt `epoch` (≥ 1, larger than any before, the same on every member of the
    // attempt): the round numbering restarts at the epoch's base, and frames of earlier attempts —
    // rounds and point-to-point messages alike — that are still buffered or still arrive are
    // discarded.
    virtual void begin_epoch(uint64_t epoch) = 0;
    // Tells `peers` that this member gave up the current attempt, with the members it found lost,
    // so a peer waiting for it in that attempt fails at once instead of at its timeout.
    virtual void abandon(const std::vector<int>& peers) = 0;
    // Whether member `r` gave up the current attempt (its abandon word for it has arrived, before
    // or after this member began the attempt).
    virtual bool gave_up(int r) const = 0;
    // Tells `peers` that this member counts them out of its rounds — a node of their replica is
    // lost, so the replica leaves as a whole — with the members it found lost: an abandon of the
    // current attempt naming the peers themselves, sent whether or not they count lost here.
    virtual void tell_out(const std::vector<int>& peers) = 0;
    // Whether a peer counted this member out of its rounds (tell_out). Sticky until admission.
    virtual bool counted_out() const = 0;
    // Member `r` is back (it rejoined as a new incarnation): no longer counted lost.
    virtual void forgive(int r) = 0;
    // Member `r` is lost, as a peer found (a joiner learns it from its donor).
    virtual void declare_lost(int r) = 0;
    // A joiner tells `peer` (its donor) that it is up and waits for the state after the round at
    // `step`, and the donor waits for that word before it sends: a node process restarted after a
    // kill must not have its state sent to the process that died. Framing only, outside round
    // attempts. wait_ready fails when `peer` is lost or gone, or on abort; no backstop.
    virtual void tell_ready(int peer, uint64_t step) = 0;
    virtual Status wait_ready(int peer, uint64_t step) = 0;
    // A node process restarted after a real loss does not know the round it will join after: its
    // word (tell_ready with kReadyLive) says only that it is up. A peer that hears it counts the
    // sender lost at once — whatever its predecessor was doing is gone — and heard_live(r) stays
    // true until forgive(r). Non-blocking: it reads what has arrived.
    static constexpr uint64_t kReadyLive = ~uint64_t{0};
    virtual bool heard_live(int r) = 0;
    // Such a process does not know how far its peers' rounds are either: until its next
    // begin_epoch, round frames of any later round are kept (a bounded number), not dropped as too
    // far ahead. That begin_epoch admits it: counted_out() is cleared, and abandon words of earlier
    // epochs (telling its predecessor or its absence out) are ignored from then on.
    virtual void await_admission() = 0;
    // This member stops receiving for good, without saying it left: its process is about to be
    // killed by a fault schedule, and what its peers send from now on must wait for the process that
    // takes its endpoint over. Nothing may be received afterwards. `restarting`: a fresh process
    // will take the endpoint over (a kill with a rejoin); the peers are told so, and do not count the
    // member lost for its silence while the fresh process starts (MeshMembership::kRestartAllowanceS).
    virtual void go_quiet(bool restarting) = 0;

    // The membership of a transport that never loses a member: nobody is ever lost, gives up or is
    // counted out, and no word needs waiting for. Stateless; shared.
    static Membership& never_lost();
};

}  // namespace tw

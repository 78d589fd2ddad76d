#!/usr/bin/python3
"""The churn experiment's table (experiments/churn.toml, docs/faults.md) from a run store.

Usage: /usr/bin/python3 scripts/churn_table.py RUNS.db [NAME-PREFIX]

Per finished run: final validation loss; the share of scheduled replica-steps that were trained
(a replica that is down trains nothing); rounds held with every replica, of all rounds (rounds
with fewer record round.members on their members); recovery bytes sent (bytes.outer.recovery.sent,
summed over replicas); outer bytes per replica (mean); the final simulated time (slowest replica);
and the compute lost to churn in replica-seconds (untrained steps × the step's simulated compute).

A replica is one node (replica-N) or, in a run with pipeline replicas, the S nodes of its pipeline
(replica-N.0 … replica-N.S-1), counted once: a pipeline reports train.loss from its last stage only,
its outer bytes are the sum of its stage nodes', and its step's compute is the sum of its stage
nodes' (train.compute_s), so a lost pipeline step costs the compute of all its stages."""
import sqlite3
import sys
import tomllib


def replica_of(node):
    """replica-2.1 (stage 1 of pipeline replica 2) and replica-2 (a full replica) are replica-2."""
    return node.split(".")[0]


def main():
    db = sqlite3.connect(sys.argv[1])
    prefix = sys.argv[2] if len(sys.argv) > 2 else ""
    cols = ("run", "val loss", "steps trained", "full rounds", "recovery B", "outer B/replica", "sim s", "lost s")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for rid, name, cfg in db.execute("select id, name, config_toml from runs where status = 'finished' order by id"):
        if not name.startswith(prefix):
            continue
        q = lambda sql: db.execute(sql, (rid,)).fetchall()
        conf = tomllib.loads(cfg)
        replicas = int(conf["outer"]["replicas"])
        steps = int(conf["train"]["steps"])
        val = q("select value from metrics where run_id = ? and name = 'val.loss' order by step desc limit 1")
        trained = q("select count(*) from metrics where run_id = ? and name = 'train.loss'")[0][0]
        rounds = q("select count(distinct step) from metrics where run_id = ? and name = 'round.bytes'")[0][0]
        partial = q("select count(distinct step) from metrics where run_id = ? and name = 'round.members'")[0][0]
        rec = q("select node, max(value) from metrics where run_id = ? and name = 'bytes.outer.recovery.sent' group by node")
        sent = {}
        for node, v in q("select node, max(value) from metrics where run_id = ? and name = 'bytes.outer.sent' group by node"):
            sent[replica_of(node)] = sent.get(replica_of(node), 0) + v
        sim = q("select max(sim_s) from metrics where run_id = ?")[0][0] or 0
        step_s, done = {}, {}
        for node, v in q("select node, avg(value) from metrics where run_id = ? and name = 'train.compute_s' group by node"):
            step_s[replica_of(node)] = step_s.get(replica_of(node), 0) + v
        for node, n in q("select node, count(*) from metrics where run_id = ? and name = 'train.loss' group by node"):
            done[replica_of(node)] = done.get(replica_of(node), 0) + n
        lost = sum((steps - done.get(r, 0)) * s for r, s in step_s.items())
        print("| %s | %.4f | %.1f%% | %d / %d | %s | %s | %.2f | %.2f |" % (
            name, val[0][0] if val else float("nan"), 100.0 * trained / (replicas * steps), rounds - partial, rounds,
            f"{int(sum(v for _, v in rec)):,}", f"{int(sum(sent.values()) / max(1, len(sent))):,}", sim, lost))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The churn experiment's table (experiments/churn.toml, docs/faults.md) from a run store.

Usage: /usr/bin/python3 scripts/churn_table.py RUNS.db [NAME-PREFIX]

Per finished run: final validation loss; the share of scheduled replica-steps that were trained
(a replica that is down trains nothing); rounds held with every replica, of all rounds (rounds
with fewer record round.members on their members); recovery bytes sent (bytes.outer.recovery.sent,
summed over replicas); outer bytes per replica (mean); the final simulated time (slowest replica);
and the compute lost to churn in replica-seconds (untrained steps × the step's simulated time)."""
import sqlite3
import sys


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
        replicas = int(next(l.split("=")[1] for l in cfg.splitlines() if l.strip().startswith("replicas =")))
        steps = int(next(l.split("=")[1] for l in cfg.splitlines() if l.strip().startswith("steps =")))
        val = q("select value from metrics where run_id = ? and name = 'val.loss' order by step desc limit 1")
        trained = q("select count(*) from metrics where run_id = ? and name = 'train.loss'")[0][0]
        rounds = q("select count(distinct step) from metrics where run_id = ? and name = 'round.bytes'")[0][0]
        partial = q("select count(distinct step) from metrics where run_id = ? and name = 'round.members'")[0][0]
        rec = q("select node, max(value) from metrics where run_id = ? and name = 'bytes.outer.recovery.sent' group by node")
        sent = q("select node, max(value) from metrics where run_id = ? and name = 'bytes.outer.sent' group by node")
        sim = q("select max(sim_s) from metrics where run_id = ?")[0][0] or 0
        step_s = q("select value from metrics where run_id = ? and name = 'train.compute_s' limit 1")
        lost = (replicas * steps - trained) * (step_s[0][0] if step_s else 0)
        print("| %s | %.4f | %.1f%% | %d / %d | %s | %s | %.2f | %.2f |" % (
            name, val[0][0] if val else float("nan"), 100.0 * trained / (replicas * steps), rounds - partial, rounds,
            f"{int(sum(v for _, v in rec)):,}", f"{int(sum(v for _, v in sent) / max(1, len(sent))):,}", sim, lost))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""An experiment's points over seeds as Markdown tables (docs/budgets.md), from a run store.

Usage: /usr/bin/python3 scripts/seed_table.py RUNS.db GROUP

GROUP is the layout's name, meaning its latest launch, or a stored group ("dp@1795463535"). Every
point (a variant: runs of one name, which differ only in run.seed) is summarised over its seeds:
the final validation loss (each run's last val.loss) as mean ± sample standard deviation and its
range, the bytes each replica sent (the nodes' last outer + intra + stage counters over
outer.replicas) and the simulated time (the largest clock of any record). A point differs from the
first one only when the gap is larger than the two standard deviations together.

For an HDEE run (experiments/hdee.toml, whose combined figures are hdee.ENS.posterior.DOMAIN at the
coordinator's node "hdee") it prints each ensemble's posterior-mixture loss per domain over seeds
and, per domain, whether a heterogeneous ensemble beats the homogeneous one beyond the spread.

For the DiLoCo scaling experiment (experiments/diloco_scaling.toml: points named a_dp and
X_mM_lrETA) it adds the paper's table beside this machine's: per M the outer learning rate with the
lowest mean is chosen, as the paper tunes per setting."""
import re
import sqlite3
import statistics as st
import sys

PAPER = {"dp": 3.485, 1: 3.482, 2: 3.508, 4: 3.554, 8: 3.621}  # arXiv 2503.09799, Table 4, 35M, 20N tokens


def main():
    db = sqlite3.connect(sys.argv[1])
    group = sys.argv[2]
    groups = [g for (g,) in db.execute("select group_name from runs order by id")]
    if group not in groups:
        launches = [g for g in groups if g.startswith(group + "@")]
        if not launches:
            sys.exit(f"no runs in group {group}")
        group = launches[-1]
    points = {}  # variant name → [(seed, last val loss, steps)]
    for rid, name, seed, status in db.execute(
            "select id, name, seed, status from runs where group_name = ? order by id", (group,)):
        if status != "finished":
            print(f"note: run {rid} {name} seed {seed} is {status}, left out", file=sys.stderr)
            continue
        val = db.execute("select value from metrics where run_id = ? and name = 'val.loss' "
                         "order by step desc limit 1", (rid,)).fetchone()
        steps = db.execute("select max(step) from metrics where run_id = ? and name = 'train.loss'", (rid,)).fetchone()
        sent = db.execute("select sum(v) from (select max(value) as v from metrics where run_id = ? and name in "
                          "('bytes.outer.sent', 'bytes.intra.sent', 'bytes.stage.sent') group by node, name)",
                          (rid,)).fetchone()[0] or 0
        cfg = db.execute("select config_toml from runs where id = ?", (rid,)).fetchone()[0]
        replicas = int(re.search(r"^replicas = (\d+)", cfg, re.M).group(1))
        sim = db.execute("select max(sim_s) from metrics where run_id = ?", (rid,)).fetchone()[0] or 0
        if val:
            points.setdefault(name.split("-", 1)[-1], []).append((seed, val[0], steps[0], sent / replicas, sim))

    def summary(rows):
        v = [r[1] for r in rows]
        sd = st.stdev(v) if len(v) > 1 else 0.0
        return st.mean(v), sd, min(v), max(v), len(v)

    print(f"group {group}\n")
    if db.execute("select 1 from metrics m join runs r on r.id = m.run_id where r.group_name = ? and "
                  "m.name like 'hdee.%.posterior.%' limit 1", (group,)).fetchone():
        print_hdee(db, group)  # an expert's own val.loss is not the run's figure: only the mixtures
        return
    print("| point | seeds | steps | final val loss (mean ± sd) | min – max | bytes sent per replica | simulated time "
          "| against the first point |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    first = None
    for name in sorted(points):
        m, sd, lo, hi, n = summary(points[name])
        seeds = ", ".join(str(r[0]) for r in points[name])
        sent = st.mean(r[3] for r in points[name])
        sim = st.mean(r[4] for r in points[name])
        against = "—"
        if first is None:
            first = (m, sd, n)
        elif n > 1 and first[2] > 1:
            verdict = "beyond the spread" if abs(m - first[0]) > sd + first[1] else "within the spread"
            against = f"{m - first[0]:+.4f}, {verdict}"
        print(f"| {name} | {seeds} | {points[name][0][2]} | {m:.4f} ± {sd:.4f} | {lo:.4f} – {hi:.4f} | "
              f"{sent:,.0f} B | {sim:.2f} s | {against} |")

    dp = next((summary(rows) for name, rows in points.items() if name.endswith("dp")), None)
    best = {}  # M → (mean, sd, n, lr)
    for name, rows in points.items():
        match = re.search(r"_m(\d+)_lr([0-9.]+)$", name)
        if not match:
            continue
        m_rep, lr = int(match.group(1)), match.group(2)
        mean, sd, _, _, n = summary(rows)
        if m_rep not in best or mean < best[m_rep][0]:
            best[m_rep] = (mean, sd, n, lr)
    if not best:
        return
    print("\n| setting | paper (35M, 20N tokens) | here (micro, 0.17M, 20N tokens): mean ± sd (n) | outer lr chosen "
          "| against data parallel, here | paper |")
    print("|---|---:|---:|---:|---:|---:|")
    if dp:
        print(f"| data parallel | {PAPER['dp']:.3f} | {dp[0]:.4f} ± {dp[1]:.4f} ({dp[4]}) | — | — | — |")
    for m_rep in sorted(best):
        mean, sd, n, lr = best[m_rep]
        against = "—"
        if dp:
            verdict = ("one seed: no spread" if n < 2 or dp[4] < 2
                       else "beyond the spread" if abs(mean - dp[0]) > sd + dp[1] else "within the spread")
            against = f"{mean - dp[0]:+.4f} ({verdict})"
        paper = PAPER.get(m_rep)
        paper_gap = f"{paper - PAPER['dp']:+.3f}" if paper else "—"
        print(f"| DiLoCo M = {m_rep} | {paper:.3f} | {mean:.4f} ± {sd:.4f} ({n}) | {lr} | {against} | {paper_gap} |")


def print_hdee(db, group):
    """Per ensemble and domain: the posterior mixture's loss over the group's finished runs."""
    rows = db.execute("select m.name, m.value from metrics m join runs r on r.id = m.run_id where r.group_name = ? "
                      "and r.status = 'finished' and m.name like 'hdee.%.posterior.%'", (group,)).fetchall()
    if not rows:
        return
    loss = {}  # (ensemble, domain) → [values, one per run]
    for name, value in rows:
        _, ens, _, domain = name.split(".", 3)
        loss.setdefault((ens, domain), []).append(value)
    ensembles = sorted({e for e, _ in loss}, key=lambda e: (e != "homogeneous", e))
    domains = list(dict.fromkeys(d for _, d in loss))
    print("\nHDEE posterior mixture, nats/token (mean ± sd over seeds)\n")
    print("| ensemble | " + " | ".join(domains) + " |")
    print("|---|" + "---:|" * len(domains))
    for ens in ensembles:
        cells = []
        for d in domains:
            v = loss.get((ens, d), [])
            cells.append(f"{st.mean(v):.4f} ± {st.stdev(v) if len(v) > 1 else 0:.4f} (n = {len(v)})" if v else "—")
        print(f"| {ens} | " + " | ".join(cells) + " |")
    home = {d: loss.get(("homogeneous", d), []) for d in domains}
    for ens in ensembles:
        if ens == "homogeneous":
            continue
        verdicts = []
        for d in domains:
            a, b = loss.get((ens, d), []), home[d]
            if len(a) < 2 or len(b) < 2:
                verdicts.append(f"{d}: one seed")
                continue
            gap = st.mean(a) - st.mean(b)
            beyond = abs(gap) > st.stdev(a) + st.stdev(b)
            verdicts.append(f"{d} {gap:+.4f} ({'beyond' if beyond else 'within'} the spread)")
        print(f"\n{ens} against homogeneous: " + "; ".join(verdicts))


if __name__ == "__main__":
    main()

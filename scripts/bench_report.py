#!/usr/bin/env python3
"""The measured half of scripts/bench: runs deploy, deploy again (no change), diff and
destroy of one fixture against a fresh state bucket, each with CDKD_TRACE_FILE, and prints
the walk figures of the deploy and every command's whole-process wall against its bound.

  bench_report.py CDKD APP BUCKET WORKDIR LATENCY_MS CONCURRENCY NAME [cdkd flags...]

The bound of a command is the latency times the AWS calls that must happen one after another:
  deploy / destroy   each stack's heaviest chain of resource calls (from the trace) plus
                     FIXED calls per stack, summed along the longest chain of stacks (the
                     manifest's stack dependencies)
  no-change / diff   FIXED calls: one stack's, since with nothing changed no stack waits for
                     another (diff never has to)
FIXED (8) is issue 18's figure for the calls a stack's deploy needs besides its resources.
"""
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict

FIXED = 8

cdkd, app, bucket, workdir, latency, concurrency, name, *flags = sys.argv[1:]
latency = float(latency)
many = None  # set below from the manifest


def run(command, trace, expect=(0,)):
    """Runs `cdkd COMMAND --app APP --state-bucket BUCKET FLAGS`; returns (wall s, cpu s)."""
    if os.path.exists(trace):
        os.remove(trace)
    env = dict(os.environ, CDKD_TRACE_FILE=trace, CDKD_PROGRESS="plain")
    extra = {"destroy": ["--force"]}.get(command[0], [])
    cmd_flags = [f for f in flags if command[0] != "diff" or f != "--concurrency"]
    if command[0] == "diff" and "--concurrency" in flags:
        i = flags.index("--concurrency")
        cmd_flags = flags[:i] + flags[i + 2:]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run(
        [cdkd, *command, "--app", app, "--state-bucket", bucket, *cmd_flags, *extra],
        env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in expect:
        sys.stderr.write(done.stdout[-4000:])
        sys.stderr.write(done.stderr[-4000:])
        sys.exit(f"bench-{name}: cdkd {' '.join(command)} exited {done.returncode}")
    return wall, cpu


def load(trace):
    resources, calls, walk = {}, [], {}
    if not os.path.exists(trace):
        return resources, calls, walk
    for line in open(trace):
        e = json.loads(line)
        key = (e.get("stack"), e.get("id"))
        if e["event"] == "resource":
            resources[key] = e
        elif e["event"] == "call":
            calls.append(e)
        elif e["event"] == "walk":
            walk.setdefault(e.get("stack"), {})[e["phase"]] = e
    return resources, calls, walk


def chains(resources, calls):
    """Per stack: (calls on its heaviest resource chain, that chain, calls per resource)."""
    per_resource = defaultdict(int)
    for c in calls:
        if c.get("id"):
            per_resource[(c.get("stack"), c["id"])] += 1
    best, prev = {}, {}

    def heaviest(k):
        if k in best:
            return best[k]
        deps = [(k[0], d) for d in resources[k].get("dependencies", []) if (k[0], d) in resources]
        top = max(deps, key=heaviest, default=None)
        prev[k] = top
        best[k] = per_resource[k] + (heaviest(top) if top else 0)
        return best[k]

    out = {}
    for k in resources:
        heaviest(k)
    for k in resources:
        stack = k[0]
        if stack not in out or best[k] > out[stack][0]:
            chain = [k]
            while prev.get(chain[-1]):
                chain.append(prev[chain[-1]])
            out[stack] = (best[k], list(reversed(chain)))
    return out, per_resource


manifest = json.load(open(os.path.join(app, "manifest.json")))
stack_deps = {
    n: [d for d in a.get("dependencies", [])
        if manifest["artifacts"].get(d, {}).get("type") == "aws:cloudformation:stack"]
    for n, a in manifest["artifacts"].items() if a.get("type") == "aws:cloudformation:stack"
}
many = len(stack_deps) > 1


def stack_chain_bound(per_stack_calls):
    """Calls on the longest chain of stacks, each stack weighing its chain + FIXED."""
    memo = {}

    def weight(s):
        if s not in memo:
            own = per_stack_calls.get(s, 0) + FIXED
            memo[s] = own + max((weight(d) for d in stack_deps.get(s, [])), default=0)
        return memo[s]

    return max((weight(s) for s in stack_deps), default=FIXED)


def walk_figures(trace, wall_s, cpu_s):
    resources, calls, walk = load(trace)
    if not resources:
        return {}
    per_stack, per_resource = chains(resources, calls)
    if not many:
        stack = next(iter(per_stack))
        chain_calls, chain = per_stack[stack]
        on_chain = set(chain)
        chain_call_ms = sum(c["endMs"] - c["startMs"] for c in calls
                            if (c.get("stack"), c.get("id")) in on_chain)
        start = min(r["startMs"] for r in resources.values())
        finish = max(r["endMs"] for r in resources.values())
        wall = finish - start
        bound = chain_calls * latency
        print(f"bench-{name}: {len(resources)} resources, {sum(per_resource.values())} resource "
              f"calls, latency {latency:.0f} ms, --concurrency {concurrency}")
        print(f"  provisioning wall   {wall:8.0f} ms  (first resource start to last resource end)")
        print(f"  critical-path bound {bound:8.0f} ms  ({chain_calls} calls on a {len(chain)}-resource "
              f"chain x {latency:.0f} ms)")
        print(f"  ratio               {wall / bound if bound else float('nan'):8.2f}")
        print(f"  chain calls took    {chain_call_ms:8.0f} ms  (as answered; wall / that = "
              f"{wall / chain_call_ms if chain_call_ms else float('nan'):.2f}, "
              f"{(wall - chain_call_ms) / max(len(chain), 1):.1f} ms per link outside the calls)")
        print(f"  cdkd process        {wall_s * 1000:8.0f} ms wall, {cpu_s * 1000:.0f} ms CPU "
              f"({100 * cpu_s / wall_s:.1f}% of wall)")
        w = walk.get(stack, {})
        if w.get("start", {}).get("cpuMs") is not None and w.get("end", {}).get("cpuMs") is not None:
            walk_wall = w["end"]["atMs"] - w["start"]["atMs"]
            walk_cpu = w["end"]["cpuMs"] - w["start"]["cpuMs"]
            print(f"  engine in the walk  {walk_wall:8.0f} ms wall, {walk_cpu:.0f} ms CPU "
                  f"({100 * walk_cpu / walk_wall if walk_wall else float('nan'):.1f}% of wall; "
                  "from the walk's start to its end, the process's threads)")
    other = defaultdict(int)
    for c in calls:
        if not c.get("id"):
            op = c["op"]
            parts = [p for p in op.split("/")[2:] if p]
            kind = (op.split(" ")[0] + " " + parts[-1]) if op.startswith(
                ("GET", "PUT", "HEAD", "DELETE", "POST")) and parts else op
            other[kind] += 1
    print(f"  calls outside resources ({len(stack_deps)} stack(s)): "
          + ", ".join(f"{k} x{v}" for k, v in sorted(other.items())))
    return {s: c for s, (c, _) in per_stack.items()}


os.makedirs(workdir, exist_ok=True)
rows = []
deploy_wall, deploy_cpu = run(["deploy"], f"{workdir}/deploy.jsonl")
deploy_chains = walk_figures(f"{workdir}/deploy.jsonl", deploy_wall, deploy_cpu)
rows.append(("deploy", deploy_wall, stack_chain_bound(deploy_chains), 1.2))
nochange_wall, _ = run(["deploy"], f"{workdir}/nochange.jsonl")
rows.append(("no-change deploy", nochange_wall, FIXED, 2.0 if many else 1.2))
diff_wall, _ = run(["diff"], f"{workdir}/diff.jsonl")
rows.append(("diff", diff_wall, FIXED, 2.0 if many else 1.2))
destroy_wall, _ = run(["destroy"], f"{workdir}/destroy.jsonl")
resources, calls, _ = load(f"{workdir}/destroy.jsonl")
destroy_chains = chains(resources, calls)[0] if resources else {}
destroy_chains = {s: c for s, (c, _) in destroy_chains.items()}
rows.append(("destroy", destroy_wall, stack_chain_bound(destroy_chains), 1.2))

print(f"  whole process, {len(stack_deps)} stack(s), {latency:.0f} ms per request:")
print(f"    {'command':<17} {'wall':>8} {'bound':>18} {'ratio':>6} {'target':>6}")
for command, wall, bound_calls, target in rows:
    bound = bound_calls * latency / 1000
    print(f"    {command:<17} {wall:7.2f}s {bound:7.2f}s ({bound_calls:4d} calls) "
          f"{wall / bound:6.2f} {target:6.1f}")

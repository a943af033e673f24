#!/usr/bin/env python3
"""Writes scenarios/traces/sample-workflows.jsonl: 40 workflows of the four-role mix of
scenarios/agent-workflows.json (its transitions, shifted for workflows starting from 100 s), in InferScale's
session-trace shape with a `role` on every turn. Deterministic (seeded)."""
import json, math, random

rng = random.Random(20261203)
ROLES = ["planner", "coder", "tester", "reviewer"]
BEFORE = {"planner": {"coder": 0.9, "reviewer": 0.1},
          "coder": {"tester": 0.7, "coder": 0.2, "reviewer": 0.1},
          "tester": {"coder": 0.6, "reviewer": 0.3, "planner": 0.1},
          "reviewer": {"coder": 0.5, "planner": 0.5}}
AFTER = dict(BEFORE, coder={"reviewer": 0.7, "tester": 0.2, "coder": 0.1},
             reviewer={"tester": 0.6, "coder": 0.3, "planner": 0.1},
             tester={"planner": 0.5, "reviewer": 0.4, "coder": 0.1})
TOOLS = [("handoff", 0.6, 1.0), ("run_tests", 0.3, 8.0), ("build", 0.1, 20.0)]


def pick(weights):
    u, acc = rng.random() * sum(weights.values()), 0.0
    for k, w in weights.items():
        acc += w
        if u < acc:
            return k
    return k


def lognormal(mean, cv, most):
    s2 = math.log(1 + cv * cv)
    return max(1, min(most, round(math.exp(math.log(mean) - s2 / 2 + math.sqrt(s2) * rng.gauss(0, 1)))))


t = 0.0
with open("scenarios/traces/sample-workflows.jsonl", "w") as f:
    for i in range(40):
        t += rng.expovariate(1 / 5.0)
        rows = AFTER if t >= 100 else BEFORE
        n = min(20, 1 + int(rng.expovariate(1 / 5.0)))
        role, turns = "planner", []
        for k in range(n):
            turn = {"role": role, "new_tokens": lognormal(1500 if k == 0 else 1000, 0.5, 8000),
                    "output_tokens": lognormal(400, 1.0, 4000)}
            if k + 1 < n:
                name = pick({name: w for name, w, _ in TOOLS})
                mean = next(m for nm, _, m in TOOLS if nm == name)
                turn["tool"], turn["tool_s"] = name, round(rng.expovariate(1 / mean), 3)
                role = pick(rows[role])
            turns.append(turn)
        f.write(json.dumps({"id": f"wf-{i}", "arrival_s": round(t, 3), "turns": turns}) + "\n")

#!/usr/bin/env python3
"""Sanity check for the judged relevance set in this directory.

Checks formats and cross-references only; it scores no system.
Usage: python3 check.py   (exit status 1 on any error)
"""
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
errors = []


def err(msg):
    errors.append(msg)


cards = {}
with open(os.path.join(HERE, "cards.jsonl"), encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        c = json.loads(line)
        a = c.get("agentId", "")
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", a):
            err(f"cards.jsonl:{n}: bad agentId {a!r}")
        if a in cards:
            err(f"cards.jsonl:{n}: duplicate agentId {a}")
        for k in ("name", "description", "source"):
            if not isinstance(c.get(k), str) or not c[k].strip():
                err(f"cards.jsonl:{n}: missing {k}")
        tags = c.get("tags", [])
        if not (isinstance(tags, list) and 1 <= len(tags) <= 2
                and all(t == t.lower() for t in tags)):
            err(f"cards.jsonl:{n}: tags must be one or two lowercase strings")
        extra = set(c) - {"agentId", "name", "description", "tags", "source"}
        if extra:
            err(f"cards.jsonl:{n}: unexpected fields {sorted(extra)}")
        cards[a] = c

queries = {}
with open(os.path.join(HERE, "queries.tsv"), encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 2:
            err(f"queries.tsv:{n}: want 2 tab-separated fields")
            continue
        qid, text = parts
        if qid in queries:
            err(f"queries.tsv:{n}: duplicate id {qid}")
        if not 1 <= len(text.split()) <= 8:
            err(f"queries.tsv:{n}: query must have 1 to 8 words")
        queries[qid] = text

grades = collections.defaultdict(dict)
with open(os.path.join(HERE, "qrels.tsv"), encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3:
            err(f"qrels.tsv:{n}: want 3 tab-separated fields")
            continue
        qid, a, g = parts
        if qid not in queries:
            err(f"qrels.tsv:{n}: unknown query {qid}")
        if a not in cards:
            err(f"qrels.tsv:{n}: unknown agentId {a}")
        if g not in ("1", "2"):
            err(f"qrels.tsv:{n}: grade must be 1 or 2 (0 is implied)")
        if a in grades[qid]:
            err(f"qrels.tsv:{n}: duplicate pair {qid} {a}")
        grades[qid][a] = int(g)

for qid in queries:
    if not any(g == 2 for g in grades[qid].values()):
        err(f"query {qid} has no grade-2 card")

n2 = sum(g == 2 for q in grades.values() for g in q.values())
n1 = sum(g == 1 for q in grades.values() for g in q.values())
print(f"cards {len(cards)}  queries {len(queries)}  judgments {n1 + n2} "
      f"(grade 2: {n2}, grade 1: {n1})")
tagcount = collections.Counter(c["tags"][0] for c in cards.values())
print(f"categories {len(tagcount)}")
print("query  g2  g1  query text")
for qid in queries:
    g = grades[qid].values()
    print(f"{qid:5} {sum(x == 2 for x in g):3} {sum(x == 1 for x in g):3}  "
          f"{queries[qid]}")
rel = sorted(len(grades[q]) for q in queries)
g2 = sorted(sum(x == 2 for x in grades[q].values()) for q in queries)
print(f"relevant (1+2) per query: min {rel[0]} median {rel[len(rel) // 2]} "
      f"max {rel[-1]}; grade-2 per query: min {g2[0]} "
      f"median {g2[len(g2) // 2]} max {g2[-1]}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
print("OK" if not errors else f"{len(errors)} errors")
sys.exit(1 if errors else 0)

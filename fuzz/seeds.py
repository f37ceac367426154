#!/usr/bin/env python3
"""fuzz/seeds.py — writes the fuzzers' seed corpora, at fuzz time, from the
public acceptance cases (SHARED/acceptance/cases.jsonl) and the cases kept
as data (test/cases/*.test), into OUT/corpus-<fuzzer>/.

Usage (from the project root): python3 fuzz/seeds.py SHARED OUT

Seed shapes follow the harnesses (parts cut at NUL bytes):
  edn:   any EDN text (queries, patterns, tx-data, schema)
  query: query NUL inputs-JSON NUL opts-JSON [NUL pull-entity]
  tx:    tx-data NUL tx-data ... (applied in order to a fresh store)
The committed hand-picked seeds in fuzz/corpus/<fuzzer>/ are copied too.
A missing SHARED only loses the acceptance seeds."""
import hashlib
import json
import os
import re
import shutil
import sys

MAX_SEED = 16384


def write(out, name, data):
    if isinstance(data, str):
        data = data.encode()
    if not data or len(data) > MAX_SEED:
        return
    path = os.path.join(out, "corpus-" + name)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def query_seed(query, inputs=None, opts=None, entity=None):
    parts = [query, "" if inputs is None else json.dumps(inputs), opts or ""]
    if entity is not None:
        parts.append(entity)
    return "\0".join(parts)


def from_acceptance(shared, out):
    path = os.path.join(shared, "acceptance", "cases.jsonl")
    if not os.path.exists(path):
        print("seeds: %s not found, acceptance seeds skipped" % path)
        return 0
    n = 0
    with open(path) as f:
        for line in f:
            case = json.loads(line)
            txs = [case["schema"]] + list(case.get("tx", []))
            write(out, "tx", "\0".join(txs))
            for t in txs:
                write(out, "edn", t)
            q = case.get("query")
            if q:
                write(out, "edn", q)
                write(out, "query", query_seed(q, case.get("inputs")))
            n += 1
    return n


def parse_blocks(text):
    """The blocks of a .test file: (directive, body lines), comments dropped."""
    blocks, cur = [], []
    for line in text.split("\n"):
        if line.strip() == "":
            if cur:
                blocks.append(cur)
            cur = []
        elif line.startswith("#") and not cur:
            continue
        else:
            cur.append(line)
    if cur:
        blocks.append(cur)
    out = []
    for b in blocks:
        body = []
        for line in b[1:]:
            if line.startswith("=>"):
                break
            body.append(line)
        out.append((b[0], body))
    return out


def from_test_cases(out):
    n = 0
    cases = "test/cases"
    for name in sorted(os.listdir(cases)):
        if not name.endswith(".test"):
            continue
        with open(os.path.join(cases, name)) as f:
            blocks = parse_blocks(f.read())
        txs = []
        for directive, body in blocks:
            if directive.startswith("store"):
                if txs:
                    write(out, "tx", "\0".join(txs))
                txs = []
            elif directive == "tx":
                t = "\n".join(body)
                txs.append(t)
                write(out, "edn", t)
            elif directive.startswith("query") or directive == "pull":
                opts, entity, lines = "", None, []
                for line in body:
                    if line.startswith("opts "):
                        opts = line[5:]
                    elif line.startswith("entity "):
                        entity = line[7:].strip()
                    else:
                        lines.append(line)
                q = "\n".join(lines)
                write(out, "edn", q)
                if entity is not None:
                    m = re.fullmatch(r"'(.*)'", entity, re.S)
                    # an integer entity is the harness's default pull
                    entity = m.group(1).replace("''", "'") if m else None
                write(out, "query", query_seed(q, None, opts, entity))
            n += 1
        if txs:
            write(out, "tx", "\0".join(txs))
    return n


def main():
    shared, out = sys.argv[1], sys.argv[2]
    for name in ("edn", "query", "tx"):
        src = os.path.join("fuzz", "corpus", name)
        if os.path.isdir(src):
            for f in os.listdir(src):
                dst = os.path.join(out, "corpus-" + name)
                os.makedirs(dst, exist_ok=True)
                shutil.copy(os.path.join(src, f), dst)
    a = from_acceptance(shared, out)
    b = from_test_cases(out)
    print("seeds: %d acceptance cases, %d test case blocks" % (a, b))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""layering.py — the tree's shape rules, checked over the sources (make layering).

Usage: layering.py STAGE... (lowest first, as the Makefile's STAGES).

1. Every `#include "x.h"` (and `#include <x.h>` naming a file a stage holds: the earlier
   stages' folders are on the include path, so it finds theirs) in ext/ and vtab/ names a header of the same stage or of an earlier
   one, and across stages only a stage's public headers (PUBLIC below): what a stage keeps
   for its own files stays inside it. A stage's public header includes only public headers
   (its own stage's or earlier ones') and system headers, so no private header leaks out
   through it.
2. Inside a stage a file includes only its own header (x.h for x.c, or its family's header
   as FAMILY lists it), the stage's public headers, and the context headers
   (CONTEXT below) of the part of the stage it belongs to; a driver (DRIVERS below) may also
   include the headers of the sub-parts it drives. So only drivers and contexts are included
   by the others: what sub-parts share lives in a context below their driver.
3. No circle of includes.
4. No source file over 900 lines, no function over 120 lines (a function is counted from the
   first line of its signature to the `}` that closes its body; functions returning a
   function pointer count too).
5. With --lib DIR (the stage archives, lib<stage>.a): a context's files call, inside their
   stage, only context files, and nothing in a stage calls a driver (DRIVERS) or the file
   that registers the family's functions (query_funcs.c) that calls it back: what a stage's parts share lives
   below them, so no call runs back up (no circle through a context or a driver).
The linker half (each stage's archive links against the earlier stages alone) is in the
Makefile's layering target. Exit status 1 on any breach, each one named on stderr.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
MAX_FILE_LINES = 900
MAX_FUNC_LINES = 120

# The headers a stage offers the stages after it. Anything else in its folder is its own.
PUBLIC = {
    'base': {'sqlite_api.h', 'config.h'},
    'edn': {'edn.h', 'value.h'},
    'qparse': {'query_ast.h'},
    'qfunc': {'query_funcs.h'},
    'schema': {'schema.h'},
    'store': {'store.h', 'store_host.h'},
    'tx': {'tx.h'},
    'pull': {'pull.h'},
    # query_spill_table.h: rows set aside in a temporary database, which the raw-index
    # cursors (vtab/datoms_cursor.c) share with the query runner's way of spilling
    'query': {'query.h', 'query_spill_table.h'},
    'vtab': {'mentat.h'},
}

# Per stage, the context headers: what the files of one part of a stage share, below that
# part's driver. Each maps to the modules whose files may include it: a module x is x.c,
# x.h and every x_*.c, x_*.h (the part the context serves, its driver too).
# vtab's SQL objects (each a module: its files and the header it owns), which the entry
# point registers.
VTAB_OBJECTS = ('edn_t', 'edn_q', 'edn_pull', 'edn_datoms', 'edn_log', 'edn_view', 'view_def',
                'mentat_version', 'host_state')
CONTEXT = {
    # the store's shared state: the cache, the reader pool, the holds and the writer's
    # connection bookkeeping that every store file works on
    'store': {'store_context.h': ('store',)},
    # the transactor's statement cache, errors and ops, which every tx stage calls
    'tx': {'tx_context.h': ('tx',)},
    # the pull pattern's parsed form, shared by the parser and the puller
    'pull': {'pull_int.h': ('pull',)},
    'query': {
        # the compiled plan: what the compiler gives and the plan cache, the runner and
        # explain take
        'query_plan.h': ('query',),
        # the compile state, scopes and variables, and what each sub-compiler offers the
        # others (they compile each other's clause lists: not, or and rule bodies)
        'query_compile_scope.h': ('query_compile',),
        # the rule set's heads and recursion groups, shared by the rule compilers
        # (the whole-closure CTE and the choice per call, inlined, seeded), and the
        # entry points of the inlined and seeded ones
        'query_compile_rules_ctx.h': ('query_compile_rules',),
        # the state of a running query, shared by the runner, its row's pulls and the spill
        'query_run_context.h': ('query_run', 'query_spill'),
    },
    'vtab': {
        # the SQL-boundary context: arguments in and results out (sqlio), the call on a
        # store (db_path checked, store acquired, reader, watch, given back), and the
        # interrupt bridge that the call and the store connections' hook use
        'sqlio.h': VTAB_OBJECTS + ('call', 'datoms_cursor', 'run_cursor'),
        'call.h': VTAB_OBJECTS + ('datoms_cursor', 'run_cursor', 'entry'),
        'interrupt.h': ('call', 'entry'),
        # the shared cursors: a query run streamed (the edn_q table, edn_view) and a store
        # statement over the datoms (edn_datoms, edn_log)
        'run_cursor.h': ('edn_q', 'edn_view'),
        'datoms_cursor.h': ('edn_datoms', 'edn_log'),
        # the compare-and-swap lock of a cursor's rows, which both shared cursors take
        'row_lock.h': ('run_cursor', 'datoms_cursor'),
        # edn_datoms' columns and plan bits, shared by its xFilter and xBestIndex files
        'edn_datoms_int.h': ('edn_datoms',),
    },
}

# Per stage, the drivers and the headers of the sub-parts each drives. Nothing else in a
# stage includes a sub-part's header.
DRIVERS = {
    'query': {
        # the runner: plans from the cache, a spilled rest from the spill
        'query_run.c': {'query_plan_cache.h', 'query_spill.h'},
        # explain: a plan from the cache, explained instead of run
        'query_explain.c': {'query_plan_cache.h'},
        # the plan cache: a plan it lacks from the compiler, the host functions it calls
        # readied on the reader
        'query_plan_cache.c': {'query_compile.h', 'query_compile_host.h'},
    },
    'vtab': {
        # the entry point registers every SQL object
        'entry.c': {'edn_t.h', 'edn_q.h', 'edn_pull.h', 'edn_datoms.h', 'edn_log.h',
                    'edn_view.h', 'mentat_version.h', 'host_state.h'},
        # edn_view's table reads its definition through view_def
        'edn_view.c': {'view_def.h'},
        # the definition's query followed through ident renames
        'view_def.c': {'view_idents.h'},
    },
}

# The families: files that share one header as their own (a module split over several
# files). Only these count; a file x.c owns x.h and nothing else.
FAMILY = {
    # edn_q: the scalar form and the table form, one SQL name, registered through edn_q.h
    'edn_q.h': ('edn_q_scalar.c', 'edn_q_table.c'),
    # the raw-index tables' cursor: the cursor, its arguments' copies and time bounds
    'datoms_cursor.h': ('datoms_cursor.c', 'datoms_cursor_args.c'),
}

# The files that implement a context header besides x.c for x.h (a context in several files).
CONTEXT_IMPL = {
    # the scope context is four files: scopes and variables, the SQL shapes, scope copies,
    # the guards of expressions that can fail at run time
    'query': {'query_compile_sql.c': 'query_compile_scope.h',
              'query_compile_copy.c': 'query_compile_scope.h',
              'query_compile_guard.c': 'query_compile_scope.h'},
    # the raw-index cursor is two files: the cursor, its arguments' copies and time bounds
    'vtab': {'datoms_cursor_args.c': 'datoms_cursor.h'},
}

# TEMPORARY: stages whose files do not keep rule 2 yet. Their breaches are listed but do not
# fail the check. Empty this as each stage conforms (every stage does).
NOT_YET = set()


def own_header(name, headers):
    """The header of the module file `name` belongs to: itself for a header, x.h for x.c,
    or the family header FAMILY names for it; None when there is none."""
    if name.endswith('.h'):
        return name
    for h, members in FAMILY.items():
        if name in members:
            return h
    h = name[:-2] + '.h'
    return h if h in headers else None


def may_include(stage, name, inc, headers):
    """Rule 2: may file `name` of `stage` include `inc`, a header of the same stage?"""
    if inc == own_header(name, headers) or inc in PUBLIC.get(stage, set()):
        return True
    prefixes = CONTEXT.get(stage, {}).get(inc)
    stem = name[:-2]
    if prefixes is not None and any(stem == p or stem.startswith(p + '_') for p in prefixes):
        return True
    return inc in DRIVERS.get(stage, {}).get(name, set())


def stage_dir(stage):
    if stage == 'base':
        return 'ext'
    if stage == 'vtab':
        return 'vtab'
    return os.path.join('ext', stage)


# words a `(` may follow in a function's head that are not its name
NOT_NAMES = {'__attribute__', '_Alignas', 'alignas', 'void', 'char', 'short', 'int', 'long',
             'float', 'double', 'signed', 'unsigned', 'const', 'volatile', 'static', 'inline',
             'extern', '_Bool', 'restrict'}


def functions(text):
    """(first line, last line, name) of every function definition: a top-level `{` whose
    head (the text since the previous top-level `;`, `}` or preprocessor line) has a
    parameter list and is not an initializer or a struct/enum/union body. Comments, string
    and character literals are skipped, so braces inside them do not count."""
    out = []
    depth = 0
    head = []                     # characters of the current top-level head
    head_line = None              # line where the head's first non-blank character is
    start = None
    name = None
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            at_line_start = True
            if depth == 0:
                head.append(' ')
            i += 1
            continue
        if at_line_start and c == '#' and depth == 0:
            j = text.find('\n', i)
            while j != -1 and text[j - 1] == '\\':
                j = text.find('\n', j + 1)
            i = n if j == -1 else j
            head, head_line = [], None
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j == -1 else j + 2
            line += text.count('\n', i, j)
            i = j
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j == -1 else j
            continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            i = j + 1
            if depth == 0:
                head.append('0')
            continue
        if depth == 0:
            if c == ';':
                head, head_line = [], None
            elif c == '{':
                h = ''.join(head).strip()
                # the name is the first identifier a `(` follows: f in `int f(...)` and in
                # `void (*f(...))(void)`, a function returning a function pointer
                m = None
                if h.endswith(')'):
                    m = next((x for x in re.finditer(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(', h)
                              if x.group(1) not in NOT_NAMES), None)
                if m and '=' not in h and not re.match(r'(typedef\b|struct\b|enum\b|union\b)', h):
                    start, name = head_line, m.group(1)
                else:
                    start = None
                depth = 1
                head, head_line = [], None
            else:
                if head_line is None and not c.isspace():
                    head_line = line
                head.append(c)
        else:
            if c == '{':
                depth += 1
            elif c == '}':
                depth -= 1
                if depth == 0:
                    if start is not None:
                        out.append((start, line, name))
                    start = None
        i += 1
    return out


def stage_calls(lib):
    """{object: set of the objects of the same archive it calls}, from nm."""
    import subprocess
    out = subprocess.run(['nm', '-o', lib], capture_output=True, text=True, check=True).stdout
    defs, uses = {}, {}
    for l in out.splitlines():
        f = l.split()
        if len(f) < 2 or ':' not in f[0]:
            continue
        obj = f[0].split(':')[1]
        if f[-2] in 'TDBR':
            defs[f[-1]] = obj
        elif f[-2] == 'U':
            uses.setdefault(obj, set()).add(f[-1])
    return {o: {defs[u] for u in us if u in defs and defs[u] != o} for o, us in uses.items()}


def reach(calls, v):
    """The objects the object v calls, directly or through others."""
    seen, todo = set(), [v]
    while todo:
        for w in calls.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def check_calls(stages, libdir, errors):
    """Rule 5 over the archives in libdir."""
    for s in stages:
        calls = stage_calls(os.path.join(libdir, 'lib%s.a' % s))
        ctx = {h[:-2] + '.c' for h in CONTEXT.get(s, {})} | set(CONTEXT_IMPL.get(s, {}))
        up = set(DRIVERS.get(s, {})) | ({'query_funcs.c'} if s == 'qfunc' else set())
        for o, called in sorted(calls.items()):
            c = o[:-2] + '.c'
            for w in sorted(called):
                wc = w[:-2] + '.c'
                if c in ctx and wc not in ctx:
                    errors.append('%s (a context of stage %s) calls %s, a part it serves'
                                  % (c, s, wc))
                elif wc in up and o in reach(calls, w):
                    errors.append('%s calls %s, the driver above it in stage %s, which calls '
                                  'it back' % (c, wc, s))


def main(stages):
    libdir = None
    if stages[:1] == ['--lib']:
        libdir, stages = stages[1], stages[2:]
    errors = []
    owner = {}                       # file name -> stage
    files = []                       # (stage, relative path)
    for s in stages:
        d = os.path.join(ROOT, stage_dir(s))
        for name in sorted(os.listdir(d)):
            if name.endswith(('.c', '.h')):
                if name in owner:
                    errors.append('%s: two stages hold a file of this name (%s, %s)'
                                  % (name, owner[name], s))
                owner[name] = s
                files.append((s, os.path.join(stage_dir(s), name)))
    rank = {s: i for i, s in enumerate(stages)}
    headers = {s: [os.path.basename(r) for t, r in files if t == s and r.endswith('.h')]
               for s in stages}
    notes = []
    graph = {}
    for s, rel in files:
        name = os.path.basename(rel)
        graph[name] = []
        with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
            text = f.read()
        for n, line in enumerate(text.split('\n'), 1):
            m = re.match(r'\s*#\s*include\s*([<"])([^">]+)[">]', line)
            if not m:
                continue
            if m.group(1) == '<' and '/' in m.group(2):
                continue                  # <sys/x.h> and the like: no stage's folder has one
            inc = os.path.basename(m.group(2))
            t = owner.get(inc)
            if t is None:
                # <...> names a system header unless a stage holds a file of that name
                # (the earlier stages' folders are on the include path, so <x.h> finds
                # theirs as "x.h" would)
                if m.group(1) == '"':
                    errors.append('%s:%d: includes "%s", which no stage holds' % (rel, n, inc))
                continue
            graph[name].append(inc)
            if rank[t] > rank[s]:
                errors.append('%s:%d: stage %s includes "%s" of the later stage %s'
                              % (rel, n, s, inc, t))
            elif t != s and inc not in PUBLIC.get(t, set()):
                errors.append('%s:%d: includes "%s", which stage %s keeps for its own files'
                              % (rel, n, inc, t))
            elif name in PUBLIC.get(s, set()) and inc not in PUBLIC.get(t, set()):
                errors.append('%s:%d: the public header includes "%s", which is not public'
                              % (rel, n, inc))
            elif t == s and not may_include(s, name, inc, headers[s]):
                (notes if s in NOT_YET else errors).append(
                    '%s:%d: includes "%s", neither its own header, nor public, nor a context '
                    'of its part, nor a sub-part it drives' % (rel, n, inc))
        lines = text.split('\n')
        if len(lines) - 1 > MAX_FILE_LINES:
            errors.append('%s: %d lines (at most %d)' % (rel, len(lines) - 1, MAX_FILE_LINES))
        for start, end, name in functions(text):
            if end - start + 1 > MAX_FUNC_LINES:
                errors.append('%s:%d: function %s of %d lines (at most %d)'
                              % (rel, start, name, end - start + 1, MAX_FUNC_LINES))
    # circles: depth-first over the include graph
    state = {}

    def visit(v, path):
        state[v] = 1
        for w in graph.get(v, []):
            if state.get(w) == 1:
                errors.append('include circle: %s' % ' -> '.join(path[path.index(w):] + [w]))
            elif w not in state:
                visit(w, path + [w])
        state[v] = 2
    for v in graph:
        if v not in state:
            visit(v, [v])
    if libdir:
        check_calls(stages, libdir, errors)
    for e in notes:
        print('layering: (not yet) %s' % e, file=sys.stderr)
    for e in errors:
        print('layering: ' + e, file=sys.stderr)
    if not errors:
        print('layering: %d files in %d stages: includes run down the pipeline only, inside a stage '
              'only to own, public, context and driven headers, no circle, no file over %d lines, no function over %d'
              % (len(files), len(stages), MAX_FILE_LINES, MAX_FUNC_LINES))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

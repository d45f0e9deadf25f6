#!/usr/bin/env python3
"""Circles between the files of one folder of src/.

    tools/layout_cycles.py [-v] DIR...

Every .c and .h file of DIR is a node; an edge goes from a file to
  - a header of the same folder that it includes ("x.h" or "DIR/x.h"),
  - the .c file that defines a non-static function it calls.
Prints, per folder, every set of files that reach each other (a strongly
connected set of more than one file); -v prints the edges too.  Exits 1
when there is one.  A circle is broken by a lower file both can use (see
src/isolate: region_table.c and channel.c).  The ctest layout_no_cycles
runs it on the folders kept free of circles."""
import os
import re
import sys


def edges_of(d):
    files = sorted(f for f in os.listdir(d) if f.endswith(('.c', '.h')))
    folder = os.path.basename(os.path.normpath(d))
    text = {f: open(os.path.join(d, f), encoding='utf-8', errors='replace').read() for f in files}
    bare = {f: re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', ' ', t, flags=re.S) for f, t in text.items()}
    edges = {}
    for f, t in text.items():
        for inc in re.findall(r'#\s*include\s+"([^"]+)"', t):
            parts = inc.split('/')
            if (len(parts) == 1 or parts[-2] == folder) and parts[-1] in text and parts[-1] != f:
                edges.setdefault((f, parts[-1]), set()).add('include')
    defs = {}
    for f in files:
        if f.endswith('.c'):
            for m in re.finditer(r'^(?!static\b)[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*\{', bare[f], re.M):
                defs.setdefault(m.group(1), f)
    for f in files:
        if f.endswith('.c'):
            for name, owner in defs.items():
                if owner != f and re.search(r'\b' + re.escape(name) + r'\s*\(', bare[f]):
                    edges.setdefault((f, owner), set()).add('call')
    return files, edges


def circles(nodes, edges):
    adj = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for n in nodes:
        if n not in index:
            visit(n)
    return out


def main(argv):
    verbose = '-v' in argv
    dirs = [a for a in argv if a != '-v']
    if not dirs:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    bad = 0
    for d in dirs:
        nodes, edges = edges_of(d)
        if verbose:
            for (a, b), kinds in sorted(edges.items()):
                print(f'  {a} -> {b} ({", ".join(sorted(kinds))})')
        found = circles(nodes, edges)
        print(f'{d}: {len(nodes)} files, {len(edges)} edges, {len(found)} circle(s)')
        for c in found:
            print('  circle: ' + ' <-> '.join(c))
        bad += len(found)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

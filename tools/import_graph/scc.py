"""Strongly connected components (Tarjan), iterative so a deep import chain cannot hit the recursion limit."""
from __future__ import annotations


def strongly_connected(nodes, pairs) -> list[list[str]]:
    """The SCCs of the graph with `nodes` and (source, target) `pairs`, each sorted, in Tarjan's order."""
    successors = {node: [] for node in nodes}
    for source, target in pairs:
        if target not in successors[source]:
            successors[source].append(target)
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def enter(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return node, iter(successors[node])

    for start in successors:
        if start in index:
            continue
        work = [enter(start)]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    work.append(enter(child))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while not component or component[-1] != node:
                    component.append(stack.pop())
                    on_stack.discard(component[-1])
                components.append(sorted(component))
    return components

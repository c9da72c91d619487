"""replace_pattern: find every occurrence of one traced function's graph inside a GraphModule and
replace it with another function's graph."""
from typing import NamedTuple

from .node import Node, map_arg


class Match(NamedTuple):
    anchor: Node       # the node of the module's graph that produced the pattern's output
    nodes_map: dict    # pattern node -> module graph node


def _same_constant(a, b):
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_constant(x, y) for x, y in zip(a, b))
    if isinstance(a, Node) or isinstance(b, Node):
        return False
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return a is b


class _Matcher:
    def __init__(self, pattern_graph):
        nodes = list(pattern_graph.nodes)
        outs = [n for n in nodes if n.op == "output"]
        if len(outs) != 1 or not isinstance(outs[0].args[0], Node):
            raise ValueError("replace_pattern: the pattern must return exactly one traced value")
        self.out = outs[0]
        self.anchor = outs[0].args[0]
        self.placeholders = [n for n in nodes if n.op == "placeholder"]

    def match(self, gnode):
        m = {}
        if not self._match(self.anchor, gnode, m):
            return None
        # values computed inside the match must not escape it (except through the anchor)
        inner = {g for p, g in m.items() if p.op != "placeholder"}
        for p, g in m.items():
            if p.op == "placeholder" or g is gnode:
                continue
            if any(u not in inner for u in g.users):
                return None
        return m

    def _match(self, pn, gn, m):
        if pn in m:
            return m[pn] is gn
        if pn.op == "placeholder":
            if gn in m.values():
                return False
            m[pn] = gn
            return True
        if pn.op != gn.op or pn.target != gn.target:
            return False
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        m[pn] = gn
        pairs = list(zip(pn.args, gn.args)) + [(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs]
        for pa, ga in pairs:
            if isinstance(pa, Node):
                if not isinstance(ga, Node) or not self._match(pa, ga, m):
                    del m[pn]
                    return False
            elif not _same_constant(pa, ga):
                del m[pn]
                return False
        return True


def replace_pattern(gm, pattern, replacement):
    """Replace each non-overlapping match of ``pattern`` in ``gm.graph`` by ``replacement``.

    ``pattern`` and ``replacement`` are functions (or GraphModules) with the same parameters; a match
    binds the pattern's parameters to values of ``gm``'s graph. Returns the list of Matches and
    recompiles ``gm``.
    """
    from ._symbolic_trace import symbolic_trace
    from .graph_module import GraphModule
    pg = pattern.graph if isinstance(pattern, GraphModule) else symbolic_trace(pattern).graph
    rg = replacement.graph if isinstance(replacement, GraphModule) else symbolic_trace(replacement).graph
    r_placeholders = [n for n in rg.nodes if n.op == "placeholder"]
    matcher = _Matcher(pg)
    if len(r_placeholders) != len(matcher.placeholders):
        raise ValueError(f"replace_pattern: pattern takes {len(matcher.placeholders)} inputs but the "
                         f"replacement takes {len(r_placeholders)}")
    graph = gm.graph
    matches, used = [], set()
    for node in list(graph.nodes):
        if node.op == "output" or node in used:
            continue
        m = matcher.match(node)
        if m is None or any(g in used for p, g in m.items() if p.op != "placeholder"):
            continue
        used.update(g for p, g in m.items() if p.op != "placeholder")
        matches.append(Match(node, m))
    replaced = {}  # anchor of an earlier match -> the value that replaced it
    for match in matches:
        m, anchor = match.nodes_map, match.anchor
        val_map = {rp: replaced.get(m[pp], m[pp]) for rp, pp in zip(r_placeholders, matcher.placeholders)}
        with graph.inserting_before(anchor):
            for rn in rg.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    new_out = map_arg(rn.args[0], lambda n: val_map[n])
                    break
                val_map[rn] = graph.node_copy(rn, lambda n: val_map[n])
        if not isinstance(new_out, Node):
            raise ValueError("replace_pattern: the replacement must return exactly one traced value")
        anchor.replace_all_uses_with(new_out)
        replaced[anchor] = new_out
        for p in reversed(list(pg.nodes)):
            g = m.get(p)
            if g is not None and p.op != "placeholder" and not g.users and not g._erased:
                graph.erase_node(g)
    gm.recompile()
    return matches

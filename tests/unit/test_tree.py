"""The message tree and the client view merge (PROTOCOL.md §4), with property-based tests."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holdpoint.core.errors import ViewConflict
from holdpoint.core.tree import Node, Tree


def apply(tree: Tree, view: list[dict[str, Any]], counter: itertools.count) -> Any:
    merge = tree.merge_view(view, lambda i: f"m{next(counter)}")
    for node in merge.new_nodes:
        tree.add(node)
    tree.head_id = merge.head_id
    return merge


def msg(id_: str | None, text: str = "x") -> dict[str, Any]:
    out: dict[str, Any] = {"role": "user", "content": text}
    if id_:
        out["id"] = id_
    return out


def test_view_matches_by_id_from_the_root_and_branches_at_the_first_new_message() -> None:
    tree, ids = Tree(), itertools.count()
    merge = apply(tree, [msg("a"), msg("b"), msg("c")], ids)
    assert merge.new_from == 0 and [n.id for n in tree.active_path()] == ["a", "b", "c"]
    merge = apply(tree, [msg("a"), msg(None, "edit")], ids)
    assert merge.new_from == 1 and merge.fork_id == "a"
    assert [n.id for n in tree.active_path()] == ["a", "m0"]
    assert tree.nodes["m0"].parent_id == "a" and "c" in tree.nodes  # old branch kept


def test_view_stopping_at_an_earlier_node_only_moves_the_head() -> None:
    tree, ids = Tree(), itertools.count()
    apply(tree, [msg("a"), msg("b")], ids)
    merge = apply(tree, [msg("a")], ids)
    assert merge.new_nodes == [] and tree.head_id == "a" and len(tree.nodes) == 2


def test_known_id_again_changes_nothing_and_a_misplaced_known_id_is_refused() -> None:
    tree, ids = Tree(), itertools.count()
    apply(tree, [msg("a"), msg("b")], ids)
    assert apply(tree, [msg("a"), msg("b")], ids).new_nodes == []
    with pytest.raises(ViewConflict) as conflict:
        tree.merge_view([msg("b")], lambda i: "z")
    assert conflict.value.index == 0


def test_branch_head_of_an_abandoned_branch_is_its_newest_leaf() -> None:
    tree = Tree()
    for node in (Node("a", None, {}, 1), Node("b", "a", {}, 2), Node("c", "b", {}, 3), Node("d", "a", {}, 4)):
        tree.add(node)
    tree.head_id = "d"
    assert tree.branch_head("b") == "c"
    assert tree.branch_head("a") == "d"  # on the active path: the session head
    assert tree.is_ancestor_or_self("a", "c") and not tree.is_ancestor_or_self("d", "c")


@st.composite
def view_sequences(draw: st.DrawFn) -> list[tuple[int, int, list[bool]]]:
    """Each view: (which existing path to reuse, how much of it, new messages with/without ids)."""
    return draw(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000),
                                   st.lists(st.booleans(), max_size=4)), min_size=1, max_size=25))


@settings(max_examples=200, deadline=None)
@given(view_sequences())
def test_property_views_keep_one_tree_lose_nothing_and_head_is_last_of_last_view(
        seq: list[tuple[int, int, list[bool]]]) -> None:
    tree, ids, fresh = Tree(), itertools.count(), itertools.count()
    seen: set[str] = set()
    for pick, cut, news in seq:
        leaves = sorted(tree.nodes)
        base = [n.message for n in tree.path(leaves[pick % len(leaves)])] if leaves else []
        base = base[: cut % (len(base) + 1)]
        view = [dict(m) for m in base] + [msg(f"u{next(fresh)}" if with_id else None) for with_id in news]
        if not view:
            continue
        before = dict(tree.nodes)
        merge = apply(tree, view, ids)
        for node in merge.new_nodes:
            node.message = {**node.message, "id": node.id}
        # never loses or duplicates a node
        assert set(before) <= set(tree.nodes)
        assert len(tree.nodes) == len(before) + len(merge.new_nodes)
        # one tree: every parent exists, no cycles, every node reaches a root
        for node in tree.nodes.values():
            assert node.parent_id is None or node.parent_id in tree.nodes
            assert tree.path(node.id)[-1].id == node.id
        # the head is the last node of the last view, and the view is the active path
        last = view[-1].get("id") or merge.new_nodes[-1].id
        assert tree.head_id == last
        assert len(tree.active_path()) == len(view)
        seen |= set(tree.nodes)
    assert seen == set(tree.nodes)

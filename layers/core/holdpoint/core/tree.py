"""The message tree: every message is a node with a parent; the head is the active leaf."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from holdpoint.core.errors import ViewConflict
from holdpoint.core.jsontypes import JsonObject


@dataclass
class Node:
    id: str
    parent_id: str | None
    message: JsonObject
    order: int = 0

    def wire(self) -> JsonObject:
        out: JsonObject = {"message": self.message}
        if self.parent_id is not None:
            out["parent_id"] = self.parent_id
        return out


@dataclass
class ViewMerge:
    """What a client view does to the tree: nodes to add and where the head goes."""

    new_nodes: list[Node]
    new_from: int | None
    fork_id: str | None
    head_id: str | None


@dataclass
class Tree:
    nodes: dict[str, Node] = field(default_factory=dict)
    head_id: str | None = None

    def add(self, node: Node) -> None:
        self.nodes[node.id] = node

    def path(self, node_id: str | None) -> list[Node]:
        """Root-to-node path; empty for None."""
        out: list[Node] = []
        seen: set[str] = set()
        cur = node_id
        while cur is not None and cur in self.nodes and cur not in seen:
            seen.add(cur)
            node = self.nodes[cur]
            out.append(node)
            cur = node.parent_id
        out.reverse()
        return out

    def path_ids(self, node_id: str | None) -> set[str]:
        return {n.id for n in self.path(node_id)}

    def active_path(self) -> list[Node]:
        return self.path(self.head_id)

    def is_ancestor_or_self(self, ancestor: str, node_id: str | None) -> bool:
        return ancestor in self.path_ids(node_id)

    def children(self, node_id: str | None) -> list[Node]:
        return sorted((n for n in self.nodes.values() if n.parent_id == node_id), key=lambda n: n.order)

    def branch_head(self, node_id: str | None) -> str | None:
        """The head of the branch through `node_id`: the session head when the node is on the
        active path, else the newest leaf below it (the branch as it was left)."""
        if node_id is None:
            return self.head_id
        if self.is_ancestor_or_self(node_id, self.head_id):
            return self.head_id
        cur = node_id
        while True:
            kids = self.children(cur)
            if not kids:
                return cur
            cur = kids[-1].id

    def next_order(self) -> int:
        return max((n.order for n in self.nodes.values()), default=0) + 1

    def wire(self) -> JsonObject:
        out: JsonObject = {"nodes": [n.wire() for n in sorted(self.nodes.values(), key=lambda n: n.order)]}
        if self.head_id is not None:
            out["head_id"] = self.head_id
        return out

    def merge_view(self, view: list[JsonObject], mint: Callable[[int], str]) -> ViewMerge:
        """Match a client's full view by id from the root; the first new or id-less message
        starts a branch at the last matched node. `mint(i)` gives an id for an id-less message."""
        parent: str | None = None
        index = len(view)
        for i, msg in enumerate(view):
            mid = message_id(msg)
            known = self.nodes.get(mid) if mid else None
            if known is None or known.parent_id != parent:
                index = i
                break
            parent = known.id
        if index == len(view):
            return ViewMerge(new_nodes=[], new_from=None, fork_id=parent, head_id=parent)
        fork = parent
        order = self.next_order()
        new_nodes: list[Node] = []
        seen: set[str] = set()
        for i in range(index, len(view)):
            msg = dict(view[i])
            mid = message_id(msg) or mint(i)
            if mid in self.nodes or mid in seen:
                raise ViewConflict(i, f"message id {mid!r} already exists elsewhere in the tree")
            seen.add(mid)
            msg["id"] = mid
            new_nodes.append(Node(id=mid, parent_id=parent, message=msg, order=order))
            order += 1
            parent = mid
        return ViewMerge(new_nodes=new_nodes, new_from=index, fork_id=fork, head_id=parent)


def message_id(message: JsonObject) -> str | None:
    """A message's id: a string (`Message` validated it) or absent; anything else is refused."""
    mid = message.get("id")
    if mid is None or isinstance(mid, str):
        return mid
    raise TypeError(f"message id {mid!r} is not a string")

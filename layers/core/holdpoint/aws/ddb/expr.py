"""DynamoDB condition and update expressions built from named parts, never edited as strings.

An `Expr` owns the placeholders: every attribute name becomes `#name` and every value `:vN`, so
reserved words (`status`, `ttl`) need no special case and two parts can never clash. Conditions
are `Cond` trees; an update is a set of `SET`, `ADD` and `REMOVE` parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias, TypedDict, TypeVar


class AttributeValue(TypedDict, total=False):
    """DynamoDB's low-level attribute value: exactly one of these keys is set (`{"S": "..."}`,
    `{"N": "3"}`, `{"L": [...]}`), so a reader indexes the type it wrote."""

    S: str
    N: str
    B: bytes
    BOOL: bool
    NULL: bool
    M: dict[str, AttributeValue]
    L: list[AttributeValue]
    SS: list[str]
    NS: list[str]
    BS: list[bytes]


Item: TypeAlias = dict[str, AttributeValue]
"""An item, or a key, as the low-level client reads and writes it."""


class Expression(TypedDict, total=False):
    """A request's expression arguments (`Expr.request`), spread into the client's call."""

    KeyConditionExpression: str
    UpdateExpression: str
    ConditionExpression: str
    FilterExpression: str
    ExpressionAttributeNames: dict[str, str]
    ExpressionAttributeValues: dict[str, AttributeValue]


E = TypeVar("E", bound=Expression)


class Write(Expression, total=False):
    """One write of a transaction (`Put`'s item, `Update`'s or `Delete`'s key); `Table.transact`
    names the table."""

    TableName: str
    Item: dict[str, AttributeValue]
    Key: dict[str, AttributeValue]


class TransactOp(TypedDict, total=False):
    """One entry of TransactWriteItems: exactly one of these is set."""

    Put: Write
    Update: Write
    Delete: Write
    ConditionCheck: Write


class QueryArgs(Expression, total=False):
    """A Query's arguments besides the table's name (`Table.query_page` adds it)."""

    IndexName: str
    ScanIndexForward: bool
    ConsistentRead: bool
    Limit: int
    Select: str
    ExclusiveStartKey: dict[str, AttributeValue]


class QueryPage(TypedDict, total=False):
    """The part of a Query's response the store reads."""

    Items: list[dict[str, AttributeValue]]
    LastEvaluatedKey: dict[str, AttributeValue]
    Count: int


def s(value: str) -> AttributeValue:
    return {"S": value}


def n(value: int) -> AttributeValue:
    return {"N": str(value)}


@dataclass
class Expr:
    """The placeholder tables one request's expressions share."""

    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, AttributeValue] = field(default_factory=dict)

    def name(self, attr: str) -> str:
        key = "#" + "".join(c if c.isalnum() else "_" for c in attr)
        self.names[key] = attr
        return key

    def value(self, value: AttributeValue) -> str:
        key = f":v{len(self.values)}"
        self.values[key] = value
        return key

    def request(self, *, condition: Cond | None = None, update: Update | None = None,
                key_condition: Cond | None = None, filter_: Cond | None = None) -> Expression:
        """The request's expression arguments, with only the placeholder tables in use."""
        return self.into(Expression(), condition=condition, update=update, key_condition=key_condition, filter_=filter_)

    def into(self, out: E, *, condition: Cond | None = None, update: Update | None = None,
             key_condition: Cond | None = None, filter_: Cond | None = None) -> E:
        """`out` (a write's or a query's other arguments) with the request's expression arguments
        added after them: a typed request is built whole, where spreading `request()` into it
        could not be checked."""
        if key_condition is not None:
            out["KeyConditionExpression"] = key_condition.root(self)
        if update is not None:
            out["UpdateExpression"] = update.render(self)
        if condition is not None:
            out["ConditionExpression"] = condition.root(self)
        if filter_ is not None:
            out["FilterExpression"] = filter_.root(self)
        if self.names:
            out["ExpressionAttributeNames"] = dict(self.names)
        if self.values:
            out["ExpressionAttributeValues"] = dict(self.values)
        return out


class Cond:
    """One part of a condition; `&` and `|` join parts."""

    def render(self, expr: Expr) -> str:
        raise NotImplementedError

    def root(self, expr: Expr) -> str:
        """The condition as a whole expression (a join needs no outer parentheses)."""
        return self.render(expr)

    def __and__(self, other: Cond) -> Cond:
        return _Join("AND", (self, other))

    def __or__(self, other: Cond) -> Cond:
        return _Join("OR", (self, other))


@dataclass(frozen=True)
class _Join(Cond):
    op: str
    parts: tuple[Cond, ...]

    def render(self, expr: Expr) -> str:
        return f"({self.root(expr)})"

    def root(self, expr: Expr) -> str:
        return f" {self.op} ".join(p.render(expr) for p in self._flat())

    def _flat(self) -> list[Cond]:
        """`a & b & c` as one AND of three parts, not nested pairs."""
        out: list[Cond] = []
        for part in self.parts:
            out.extend(part._flat() if isinstance(part, _Join) and part.op == self.op else [part])
        return out


@dataclass(frozen=True)
class Compare(Cond):
    """`attr op value`; `size=True` compares the attribute's size (a list's length)."""

    attr: str
    op: str
    value: AttributeValue
    size: bool = False

    def render(self, expr: Expr) -> str:
        left = f"size({expr.name(self.attr)})" if self.size else expr.name(self.attr)
        return f"{left} {self.op} {expr.value(self.value)}"


@dataclass(frozen=True)
class Exists(Cond):
    attr: str
    present: bool = True

    def render(self, expr: Expr) -> str:
        fn = "attribute_exists" if self.present else "attribute_not_exists"
        return f"{fn}({expr.name(self.attr)})"


@dataclass(frozen=True)
class OneOf(Cond):
    attr: str
    values: tuple[AttributeValue, ...]

    def render(self, expr: Expr) -> str:
        return f"{expr.name(self.attr)} IN ({', '.join(expr.value(v) for v in self.values)})"


@dataclass(frozen=True)
class Between(Cond):
    attr: str
    low: AttributeValue
    high: AttributeValue

    def render(self, expr: Expr) -> str:
        return f"{expr.name(self.attr)} BETWEEN {expr.value(self.low)} AND {expr.value(self.high)}"


class Never(Cond):
    """A condition no item meets (an interrupt no origin may answer): `attribute_not_exists(PK)`
    on an item that exists."""

    def render(self, expr: Expr) -> str:
        return f"attribute_not_exists({expr.name('PK')})"


def eq(attr: str, value: AttributeValue) -> Compare:
    return Compare(attr, "=", value)


def absent_or(attr: str, cond: Cond) -> Cond:
    """`cond`, or the attribute is missing (an item written before the attribute existed)."""
    return Exists(attr, present=False) | cond


def all_of(parts: list[Cond]) -> Cond:
    return parts[0] if len(parts) == 1 else _Join("AND", tuple(parts))


@dataclass
class Update:
    """The parts of an UpdateExpression."""

    sets: dict[str, AttributeValue] = field(default_factory=dict)
    increments: dict[str, int] = field(default_factory=dict)  # SET attr = attr + n
    # SET attr = list_append(if_not_exists(attr, []), v)
    appends: dict[str, AttributeValue] = field(default_factory=dict)
    adds: dict[str, AttributeValue] = field(default_factory=dict)  # ADD attr v (a number counter)
    removes: list[str] = field(default_factory=list)

    def render(self, expr: Expr) -> str:
        sets = [f"{expr.name(a)} = {expr.value(v)}" for a, v in self.sets.items()]
        sets += [f"{expr.name(a)} = {expr.name(a)} + {expr.value(n(by))}" for a, by in self.increments.items()]
        sets += [f"{expr.name(a)} = list_append(if_not_exists({expr.name(a)}, {expr.value({'L': []})}), "
                 f"{expr.value(v)})" for a, v in self.appends.items()]
        clauses = [f"SET {', '.join(sets)}"] if sets else []
        if self.adds:
            clauses.append("ADD " + ", ".join(f"{expr.name(a)} {expr.value(v)}" for a, v in self.adds.items()))
        if self.removes:
            clauses.append("REMOVE " + ", ".join(expr.name(a) for a in self.removes))
        return " ".join(clauses)

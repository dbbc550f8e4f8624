"""`holdpoint`: the inbox, interrupts, answers and event streams from a terminal, on
`holdpoint_sdk.client`. Configuration from HOLDPOINT_URL and HOLDPOINT_API_KEY; tables (in colour on
a terminal) for people, `--json` for programs; an error is one line naming the API's error code."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

from holdpoint_sdk.client import APPROVE, DENY, MAX_BULK, Client, HoldpointError

_COLOURS = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


class Out:
    """Where the command writes: a table or plain JSON, colour only on a terminal."""

    def __init__(self, stream: TextIO, as_json: bool, colour: bool | None = None) -> None:
        self.stream = stream
        self.as_json = as_json
        if colour is None:  # https://no-color.org: NO_COLOR set to anything turns colour off
            colour = stream.isatty() and not os.environ.get("NO_COLOR")
        self.colour = colour

    def paint(self, text: str, colour: str) -> str:
        return f"\x1b[{_COLOURS[colour]}m{text}\x1b[0m" if self.colour else text

    def json(self, value: Any) -> None:
        self.stream.write(json.dumps(value, indent=None if not self.stream.isatty() else 2) + "\n")

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        cells = [[_cell(v) for v in row] for row in rows]
        widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
        self.stream.write(self.paint("  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)),
                                     "bold").rstrip() + "\n")
        for row in cells:
            self.stream.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
        if not cells:
            self.stream.write(self.paint("(none)", "dim") + "\n")


def _cell(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else ("" if value is None else json.dumps(value))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_of(item: dict[str, Any]) -> str:
    payload = item.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return str(payload["message"])
    return "" if payload is None else json.dumps(payload)


# -- commands ---------------------------------------------------------------------------------


def cmd_inbox(client: Client, args: argparse.Namespace, out: Out) -> None:
    filters = {"agent_id": args.agent, "reason": args.reason, "older_than": args.older_than,
               "expiring_within": args.expiring_within, "approver": "me" if args.mine else None}
    items = list(client.open_interrupts(**filters))
    if out.as_json:
        out.json({"interrupts": items})
        return
    out.table(["session", "interrupt", "reason", "created", "message"],
              [(i.get("session_id"), out.paint(str(i.get("interrupt_id")), "cyan"), i.get("reason"),
                i.get("created_at"), message_of(i)) for i in items])


def cmd_show(client: Client, args: argparse.Namespace, out: Out) -> None:
    item = client.interrupt(args.interrupt)
    if out.as_json:
        out.json(item)
        return
    action = item.get("action") or {}
    rows = [("session", item.get("session_id")), ("interrupt", item.get("interrupt_id")),
            ("reason", item.get("reason")), ("origin", item.get("origin")), ("created", item.get("created_at")),
            ("expires", item.get("expires_at")), ("message", message_of(item)),
            ("options", ((item.get("payload") or {}).get("metadata") or {}).get("options")
             if isinstance(item.get("payload"), dict) else None),
            ("tool", action.get("tool")), ("arguments", action.get("arguments")),
            ("fingerprint", action.get("fingerprint")), ("edited", _edits(item)),
            ("schema", item.get("response_schema"))]
    for name, value in rows:
        if value is not None:
            out.stream.write(f"{out.paint(name.ljust(12), 'bold')}{_cell(value, 200)}\n")


def _edits(item: dict[str, Any]) -> str | None:
    """Who edited the action last and when, and how many edits there were (A3); None if none."""
    edits = item.get("edits") or []
    if not edits:
        return None
    last = edits[-1]
    return f"by {(last.get('by') or {}).get('subject')} at {last.get('at')} ({len(edits)} edit(s))"


def _payload(args: argparse.Namespace, name: str = "payload") -> Any:
    """`--payload` (or `--arguments`) read as JSON; None when not given."""
    text = getattr(args, name, None)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise HoldpointError("usage", f"--{name} is not valid JSON: {exc}", param=name) from None


def _answer(verb: str) -> Callable[[Client, argparse.Namespace, Out], None]:
    def run(client: Client, args: argparse.Namespace, out: Out) -> None:
        payload = _payload(args)
        if verb == "resume" and payload is None:
            raise HoldpointError("usage", "resume needs --payload JSON", param="payload")
        edited = _payload(args, "arguments")
        if args.all_matching and args.session:
            raise HoldpointError("usage", "--all-matching takes filters (--session SESSION), not ids",
                                 param="all_matching")
        if args.all_matching and edited is not None:
            raise HoldpointError("usage", "--arguments edits one action; it does not go with --all-matching",
                                 param="arguments")
        if args.all_matching:
            _answer_matching(client, args, out, verb, payload)
            return
        if not args.session or not args.interrupt:
            raise HoldpointError("usage", f"{verb} needs <session> <interrupt>, or --all-matching with filters",
                                 param="interrupt")
        if verb == "deny":
            result = client.deny(args.session, args.interrupt, payload, args.comment, args.fingerprint)
        else:
            call = client.approve if verb == "approve" else client.resume
            result = call(args.session, args.interrupt, payload, args.comment, args.fingerprint, edited)
        if out.as_json:
            out.json(result)
        elif result.get("noop"):
            by = (result.get("resolved") or {}).get("by") or {}
            who = f" by {by.get('subject')}" if by.get("subject") else ""
            out.stream.write(out.paint(f"already answered{who}: nothing changed", "yellow") + "\n")
        else:
            colour = "red" if verb == "deny" else "green"
            out.stream.write(out.paint(f"{verb}d" if verb != "deny" else "denied", colour) +
                             f" {args.interrupt} in {args.session}\n")
            _edited(result, out)
    return run


def _edited(result: dict[str, Any], out: Out) -> None:
    """A3: what an edited approval did: the fingerprint it binds, and a quorum's count restarted."""
    edit = result.get("edit")
    if not isinstance(edit, dict):
        return
    out.stream.write(f"with your edit: fingerprint {edit.get('fingerprint')} (replaces {edit.get('replaces')})\n")
    if edit.get("superseded"):
        out.stream.write(out.paint(f"the count restarted: {edit['superseded']} earlier approval(s) no longer count",
                                   "yellow") + "\n")
    if result.get("status") == "open":
        out.stream.write(f"{result.get('approvals')} of {result.get('quorum')} approvals\n")


MATCH_FILTERS = ("agent", "reason", "older_than", "session_filter", "tool")
"""What `--all-matching` narrows the inbox by; at least one is needed, so no command answers a
whole inbox by accident."""


def _matching(client: Client, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The open interrupts the caller may answer (`approver=me`) that every filter given matches:
    agent, reason and age on the server, session and tool on the listing."""
    if all(getattr(args, name) is None for name in MATCH_FILTERS):
        raise HoldpointError("usage", "--all-matching needs a filter: --agent, --tool, --session, --reason or "
                             "--older-than", param="all_matching")
    listed = client.open_interrupts(agent_id=args.agent, reason=args.reason, older_than=args.older_than,
                                    approver="me")
    return [i for i in listed if args.session_filter in (None, i.get("session_id"))
            and args.tool in (None, (i.get("action") or {}).get("tool"))]


def _answer_matching(client: Client, args: argparse.Namespace, out: Out, verb: str, payload: Any) -> None:
    """`approve|deny|resume --all-matching`: each matching interrupt answered as its own resume,
    bound to the action the listing showed (its fingerprint sent as `expect_fingerprint`, so an
    action that changed since is refused, not approved), up to `MAX_BULK` a request. `--dry-run`
    lists them and answers nothing. A refused item is reported and makes the exit status 1."""
    found = _matching(client, args)
    if args.dry_run:
        if out.as_json:
            out.json({"interrupts": found})
            return
        out.table(["session", "interrupt", "tool", "reason", "created", "fingerprint"],
                  [(i.get("session_id"), i.get("interrupt_id"), (i.get("action") or {}).get("tool"), i.get("reason"),
                    i.get("created_at"), (i.get("action") or {}).get("fingerprint")) for i in found])
        return
    answer = payload if payload is not None else APPROVE if verb == "approve" else DENY
    items = [{"session_id": i["session_id"], "interrupt_id": i["interrupt_id"], "payload": answer,
              **({"comment": args.comment} if args.comment is not None else {}),
              **({"expect_fingerprint": (i.get("action") or {}).get("fingerprint")} if i.get("action") else {})}
             for i in found]
    results: list[dict[str, Any]] = []
    for start in range(0, len(items), MAX_BULK):
        results += client.resume_many(items[start:start + MAX_BULK]).get("results", [])
    _report(out, verb, results)
    refused = [r for r in results if r.get("http_status") != 200]
    if refused:
        raise HoldpointError("refused", f"{len(refused)} of {len(results)} interrupts were refused; each is "
                             "listed with its reason")


def _report(out: Out, verb: str, results: list[dict[str, Any]]) -> None:
    """Each item's outcome: answered, already answered (A4), or its refusal's code and message."""
    if out.as_json:
        out.json({"results": results})
        return
    done = "denied" if verb == "deny" else f"{verb}d"

    def outcome(r: dict[str, Any]) -> str:
        if r.get("http_status") != 200:
            err = r.get("error") or {}
            return out.paint(f"refused: {err.get('code')}: {err.get('message')}", "red")
        if r.get("noop"):
            return out.paint("already answered: nothing changed", "yellow")
        return out.paint(done if r.get("status") != "open" else f"{done} (quorum: {r.get('approvals')} of "
                         f"{r.get('quorum')})", "green")

    out.table(["session", "interrupt", "outcome"],
              [(r.get("session_id"), r.get("interrupt_id"), outcome(r)) for r in results])


def cmd_tail(client: Client, args: argparse.Namespace, out: Out) -> None:
    for event in client.tail(args.session, args.after, follow=not args.no_follow):
        if out.as_json:
            out.stream.write(json.dumps(event) + "\n")
        else:
            data = {k: v for k, v in event.items() if k not in ("seq", "type", "at")}
            data = data.get("data", data) if set(data) == {"data"} else data
            out.stream.write(f"{out.paint(str(event.get('seq')).rjust(5), 'dim')} {event.get('at', '')} "
                             f"{out.paint(str(event.get('type')), 'cyan')} {_cell(data, 160)}\n")
        out.stream.flush()


def cmd_sessions(client: Client, args: argparse.Namespace, out: Out) -> None:
    page = client.sessions(status=args.status, agent_id=args.agent, limit=args.limit)
    if out.as_json:
        out.json(page)
        return
    out.table(["session", "agent", "status", "updated"],
              [(s.get("session_id"), s.get("agent_id"), s.get("status"), s.get("updated_at") or s.get("created_at"))
               for s in page.get("sessions", [])])


def cmd_wait(client: Client, args: argparse.Namespace, out: Out) -> None:
    """`holdpoint wait SESSION --until interrupted`: exit 0 once it is (printing its open
    interrupts), 1 with `timed_out` if it is not within `--timeout`."""
    view = client.wait_for(args.session, [s.strip() for s in args.until.split(",") if s.strip()], args.timeout)
    if out.as_json:
        out.json(view)
        return
    out.stream.write(f"{args.session} is {view.get('status')}\n")
    for item in view.get("interrupts") or []:
        message = (item.get("payload") or {}).get("message") if isinstance(item.get("payload"), dict) else None
        out.stream.write(f"  {item.get('interrupt_id')}  {item.get('reason')}  {message or ''}\n")


def cmd_trace(client: Client, args: argparse.Namespace, out: Out) -> None:
    """`holdpoint trace SESSION`: each trace of the session (a turn, its pause and resume
    included), its hops in the order they started, with start offsets and durations."""
    found = client.trace(args.session, args.hours)
    if out.as_json:
        out.json(found)
        return
    traces = found.get("traces") or []
    if not traces:
        out.stream.write(out.paint(f"no traces of {args.session} in the last {args.hours} h", "dim") + "\n")
    for trace in traces:
        out.stream.write(f"{out.paint('trace', 'bold')} {out.paint(str(trace.get('trace_id')), 'cyan')}  "
                         f"{len(trace.get('hops') or [])} hops, {_ms(trace.get('duration_ms'))}\n")
        out.table(["hop", "start", "duration"],
                  [(h.get("name"), "+" + _ms(h.get("start_ms")), _ms(h.get("duration_ms")))
                   for h in trace.get("hops") or []])


def _ms(value: Any) -> str:
    millis = float(value or 0)
    return f"{millis / 1000:.2f} s" if millis >= 10_000 else f"{millis:.1f} ms"


# -- the parser -------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="holdpoint", description="Holdpoint from a terminal "
                                  "(HOLDPOINT_URL, HOLDPOINT_API_KEY).")
    top.add_argument("--json", action="store_true", help="plain JSON output")
    sub = top.add_subparsers(dest="command", required=True)
    inbox = sub.add_parser("inbox", help="open interrupts across sessions")
    inbox.add_argument("--agent")
    inbox.add_argument("--reason")
    inbox.add_argument("--older-than", type=int, metavar="SECONDS")
    inbox.add_argument("--expiring-within", type=int, metavar="SECONDS")
    inbox.add_argument("--mine", action="store_true", help="only those I may answer")
    inbox.set_defaults(run=cmd_inbox)
    show = sub.add_parser("show", help="one open interrupt")
    show.add_argument("interrupt")
    show.set_defaults(run=cmd_show)
    for verb in ("approve", "deny", "resume"):
        answer = sub.add_parser(verb, help=f"{verb} an interrupt, or every one matching filters")
        answer.add_argument("session", nargs="?")
        answer.add_argument("interrupt", nargs="?")
        answer.add_argument("--payload", help='JSON (approve/deny default: {"approved": true|false})')
        answer.add_argument("--comment")
        answer.add_argument("--fingerprint", help="answer only if the interrupt still approves this action "
                            "(`holdpoint show` prints it; 409 stale_approval otherwise)")
        if verb != "deny":  # an edit is given only with an approval (A3)
            answer.add_argument("--arguments", help="JSON object: approve the action with these arguments "
                                "instead (where the policy allows `edit`; a new fingerprint)")
        answer.add_argument("--all-matching", action="store_true", help="every open interrupt I may answer "
                            "that the filters match, each bound to the action listed")
        answer.add_argument("--agent")
        answer.add_argument("--tool", help="the tool the interrupt's action calls")
        answer.add_argument("--session", dest="session_filter", metavar="SESSION")
        answer.add_argument("--reason")
        answer.add_argument("--older-than", type=int, metavar="SECONDS")
        answer.add_argument("--dry-run", action="store_true", help="list what --all-matching would answer")
        answer.set_defaults(run=_answer(verb))
    tail = sub.add_parser("tail", help="follow a session's events")
    tail.add_argument("session")
    tail.add_argument("--after", type=int, default=0, metavar="SEQ")
    tail.add_argument("--no-follow", action="store_true", help="print what is there and stop")
    tail.set_defaults(run=cmd_tail)
    wait = sub.add_parser("wait", help="wait until a session's status is one of those named")
    wait.add_argument("session")
    wait.add_argument("--until", default="interrupted", help="comma-separated statuses (idle, running, "
                      "interrupted, done); default interrupted")
    wait.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS")
    wait.set_defaults(run=cmd_wait)
    trace = sub.add_parser("trace", help="a session's traces: each turn's hops with their times")
    trace.add_argument("session")
    trace.add_argument("--hours", type=int, default=24, help="how far back to look (default 24)")
    trace.set_defaults(run=cmd_trace)
    sessions = sub.add_parser("sessions", help="the tenant's sessions")
    sessions.add_argument("--status")
    sessions.add_argument("--agent")
    sessions.add_argument("--limit", type=int)
    sessions.set_defaults(run=cmd_sessions)
    return top


def main(argv: Sequence[str] | None = None, client: Client | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run one command; 0 on success, 1 with a one-line `error: code: message` otherwise."""
    args = parser().parse_args(argv)
    out = Out(stdout or sys.stdout, args.json)
    err = stderr or sys.stderr
    try:
        args.run(client or Client.from_env(), args, out)
    except HoldpointError as exc:
        err.write(f"error: {exc.line()}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The WebSocket API's one message, `subscribe` (docs/PROTOCOL.md): its own module, so that a
`$connect` or `$disconnect` cold start (http/live.py) loads no pydantic."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from holdpoint.ports import MAX_SEQ

MAX_SESSIONS_PER_MESSAGE = 10
SessionId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
Seq = Annotated[int, Field(ge=0, le=MAX_SEQ)]


class Subscribe(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    action: Literal["subscribe"]
    session_ids: Annotated[list[SessionId], Field(min_length=1, max_length=MAX_SESSIONS_PER_MESSAGE)]
    after_seq: Seq | dict[SessionId, Seq] = 0
    format: Literal["events", "ag-ui"] = "events"

    def after(self) -> dict[str, int]:
        """Each session id with the seq it follows from."""
        if isinstance(self.after_seq, int):
            return dict.fromkeys(self.session_ids, self.after_seq)
        return {sid: self.after_seq.get(sid, 0) for sid in self.session_ids}


def parse(body: dict[str, object]) -> Subscribe | tuple[str, str]:
    """The subscribe message, or what is wrong with it: (message, the field it names)."""
    try:
        return Subscribe.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        return first["msg"], str((first.get("loc") or ("body",))[0])

"""HTTP routes of compliance (thin: parse, call the service, log the access, commit).

Every read under ``/compliance`` writes an access-log row in the same transaction before
answering; ``/audit/*`` is public (keys and checkpoints are meant to be published);
``/players/me/hands`` is a player's own redacted history; ``/admin/access-log`` is for
operators.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter
from litestar.status_codes import HTTP_200_OK
from sqlalchemy import select

from app.accounts.auth import PUBLIC_OPT_KEY, principal_of, requires_role
from app.api.deps import AppSettings, DbSession
from app.compliance.access import list_access, record_access
from app.compliance.checkpoints import make_checkpoint
from app.compliance.loader import checkpoint_dict, public_key_dicts
from app.compliance.models import Checkpoint
from app.compliance.service import ComplianceService
from app.compliance.signatures import signer_for
from app.compliance.signing import SIGNATURE_ALGORITHM
from app.errors import ValidationFailed
from rng.service import RngService

__all__ = (
    "AccessLogController",
    "AuditController",
    "CheckpointController",
    "ComplianceController",
    "PlayerHandsController",
)

AnyRequest = Request[Any, Any, Any]
Limit = Annotated[int, QueryParameter(ge=1, le=200, description="Page size.")]
Offset = Annotated[int, QueryParameter(ge=0, le=1_000_000)]
Before = Annotated[
    uuid.UUID | None,
    QueryParameter(
        description=(
            "The last round of the previous page: this page starts after it (keyset "
            "pagination; stable while rounds start and finish, unlike offset)."
        )
    ),
]
RngDependency = NamedDependency[RngService]


def _utc(value: dt.datetime | None, name: str) -> dt.datetime | None:
    """A query time in UTC (one without an offset is UTC); a time PostgreSQL cannot hold
    once in UTC (year 1 or 9999 with an offset) is a 400, not a database error."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        raise ValidationFailed(
            "The request is not valid.",
            details={"errors": [{"message": "Out of range", "key": name, "source": "query"}]},
        ) from None


class ComplianceController(Controller):
    """Compliance staff: search rounds, replay, verify, export, a player's money."""

    path = "/compliance"
    tags = ["compliance"]
    guards = [requires_role("compliance")]

    @get("/rounds", operation_id="searchRounds")
    async def search(
        self,
        *,
        request: AnyRequest,
        db_session: DbSession,
        settings: AppSettings,
        rng_service: RngDependency,
        player: Annotated[
            uuid.UUID | None, QueryParameter(description="A player's user id.")
        ] = None,
        table: Annotated[uuid.UUID | None, QueryParameter(description="A table id.")] = None,
        since: Annotated[
            dt.datetime | None,
            QueryParameter(name="from", description="Rounds started at or after."),
        ] = None,
        until: Annotated[
            dt.datetime | None, QueryParameter(name="to", description="Rounds started before.")
        ] = None,
        limit: Limit = 50,
        offset: Offset = 0,
        before: Before = None,
    ) -> list[dict[str, Any]]:
        """Rounds by player, table and start time, newest first; ``before`` (a round id, the
        last one of the previous page) pages back."""
        since, until = _utc(since, "from"), _utc(until, "to")
        rounds = await ComplianceService(db_session, settings, rng_service).search_rounds(
            player=player,
            table=table,
            since=since,
            until=until,
            limit=limit,
            offset=offset,
            before=before,
        )
        filters = {
            "player": None if player is None else str(player),
            "table": None if table is None else str(table),
            "from": None if since is None else since.isoformat(),
            "to": None if until is None else until.isoformat(),
            "limit": limit,
            "offset": offset,
            "before": None if before is None else str(before),
            "found": len(rounds),
        }
        record_access(
            db_session, actor=principal_of(request), action="search_rounds", details=filters
        )
        await db_session.commit()
        return rounds

    @get("/rounds/{round_id:uuid}", operation_id="replayRound")
    async def replay(
        self,
        request: AnyRequest,
        round_id: FromPath[uuid.UUID],
        db_session: DbSession,
        settings: AppSettings,
        rng_service: RngDependency,
    ) -> dict[str, Any]:
        """Every log entry in order with the full state after each input and draw (all hands,
        stock, vira and wilds, pile, decisions, claims, burns, timeouts), plus the money."""
        replay = await ComplianceService(db_session, settings, rng_service).replay(round_id)
        record_access(
            db_session, actor=principal_of(request), action="replay_round", target=str(round_id)
        )
        await db_session.commit()
        return replay

    @get("/rounds/{round_id:uuid}/verification", operation_id="verifyRound")
    async def verify(
        self,
        request: AnyRequest,
        round_id: FromPath[uuid.UUID],
        db_session: DbSession,
        settings: AppSettings,
        rng_service: RngDependency,
    ) -> dict[str, Any]:
        """Run every check on a finished round: ``ok``, or the first failure and why."""
        report = await ComplianceService(db_session, settings, rng_service).verify(round_id)
        record_access(
            db_session,
            actor=principal_of(request),
            action="verify_round",
            target=str(round_id),
            details={"ok": report.ok},
        )
        await db_session.commit()
        return report.to_dict()

    @get("/rounds/{round_id:uuid}/bundle", operation_id="exportRoundBundle")
    async def bundle(
        self,
        request: AnyRequest,
        round_id: FromPath[uuid.UUID],
        db_session: DbSession,
        settings: AppSettings,
        rng_service: RngDependency,
    ) -> dict[str, Any]:
        """The dispute bundle: verify it with ``python -m app.compliance.verify_bundle``."""
        bundle = await ComplianceService(db_session, settings, rng_service).bundle(round_id)
        record_access(
            db_session, actor=principal_of(request), action="export_round", target=str(round_id)
        )
        await db_session.commit()
        return bundle

    @get("/players/{user_id:uuid}/money", operation_id="playerMoneyHistory")
    async def money(
        self,
        *,
        request: AnyRequest,
        user_id: FromPath[uuid.UUID],
        db_session: DbSession,
        settings: AppSettings,
        rng_service: RngDependency,
        limit: Annotated[int, QueryParameter(ge=1, le=500, description="Page size.")] = 100,
        before_version: Annotated[int | None, QueryParameter(ge=1, le=2**62)] = None,
    ) -> dict[str, Any]:
        """A player's wallet movements, newest first, each linked to its table and round."""
        history = await ComplianceService(db_session, settings, rng_service).money_history(
            user_id, limit=limit, before_version=before_version
        )
        record_access(
            db_session,
            actor=principal_of(request),
            action="player_money",
            target=str(user_id),
            details={"lines": len(history["lines"])},
        )
        await db_session.commit()
        return history


class CheckpointController(Controller):
    """Sign a checkpoint on demand (the scheduler makes one daily)."""

    path = "/compliance/checkpoints"
    tags = ["compliance"]
    guards = [requires_role("compliance", "operator")]

    @post("/", operation_id="createCheckpoint", status_code=HTTP_200_OK)
    async def create(
        self, request: AnyRequest, db_session: DbSession, settings: AppSettings
    ) -> dict[str, Any]:
        """Append every newly signed round to the tree and sign its root now."""
        checkpoint, _ = await make_checkpoint(
            db_session, settings, origin="api", created_by=str(principal_of(request).user_id)
        )
        data = checkpoint_dict(checkpoint)
        await db_session.commit()
        return data


class AuditController(Controller):
    """Public audit material: the signing keys and the signed checkpoints."""

    path = "/audit"
    tags = ["audit"]
    opt = {PUBLIC_OPT_KEY: True}

    @get("/public-keys", operation_id="listPublicKeys")
    async def public_keys(
        self, db_session: DbSession, settings: AppSettings
    ) -> list[dict[str, Any]]:
        """Every key that ever signed (rotations kept), with the active one flagged (its
        ``created_at`` is null until it first signs)."""
        signer = signer_for(settings)
        keys = [
            {**key, "active": key["key_id"] == signer.key_id}
            for key in await public_key_dicts(db_session)
        ]
        if not any(key["active"] for key in keys):  # not used yet: registered on first use
            keys.append(
                {
                    "key_id": signer.key_id,
                    "algorithm": SIGNATURE_ALGORITHM,
                    "public_key": signer.public_key.hex(),
                    "created_at": None,
                    "active": True,
                }
            )
        return keys

    @get("/checkpoints", operation_id="listCheckpoints")
    async def checkpoints(
        self,
        db_session: DbSession,
        limit: Limit = 20,
        offset: Offset = 0,
        before: Annotated[
            int | None,
            QueryParameter(
                ge=1,
                le=2**62,
                description=(
                    "The id of the last checkpoint of the previous page: this page lists "
                    "those with a smaller id (keyset pagination; stable while checkpoints "
                    "are signed, unlike offset, which is applied after it).  Any id is a "
                    "bound, one that names no checkpoint included."
                ),
            ),
        ] = None,
    ) -> list[dict[str, Any]]:
        """Signed tree heads, newest first; ``before`` (the last ``id`` of the previous page)
        pages back.  Ids only grow, so ``id < before`` is the rest of the list whether or
        not ``before`` names a checkpoint: an id that names none is not a 404."""
        query = select(Checkpoint).order_by(Checkpoint.id.desc()).limit(limit).offset(offset)
        if before is not None:
            query = query.where(Checkpoint.id < before)
        return [checkpoint_dict(row) for row in await db_session.scalars(query)]


class PlayerHandsController(Controller):
    """A player's own hand history."""

    path = "/players/me"
    tags = ["players"]
    guards = [requires_role("player")]

    @get("/hands", operation_id="myHandHistory")
    async def hands(
        self,
        *,
        request: AnyRequest,
        db_session: DbSession,
        settings: AppSettings,
        rng_service: RngDependency,
        limit: Annotated[int, QueryParameter(ge=1, le=50, description="Page size.")] = 10,
        offset: Offset = 0,
        before: Before = None,
    ) -> list[dict[str, Any]]:
        """Finished rounds, newest first: your cards, what was public (the closer's melds),
        the commitment and revealed seed, and ``verify_request``, ready for ``POST /rng/verify``
        (``null``, with ``verify_unavailable: "not_dealt"``, for a round that ended before its
        deal).  ``before`` (the last ``round_id`` of the previous page) pages back."""
        return await ComplianceService(db_session, settings, rng_service).hand_history(
            principal_of(request).user_id, limit=limit, offset=offset, before=before
        )


class AccessLogController(Controller):
    """Who read what, when."""

    path = "/admin/access-log"
    tags = ["admin", "compliance"]
    guards = [requires_role("operator")]

    @get("/", operation_id="listAccessLog")
    async def list_log(
        self,
        db_session: DbSession,
        limit: Limit = 100,
        before_id: Annotated[int | None, QueryParameter(ge=1, le=2**62)] = None,
        actor: Annotated[str | None, QueryParameter(max_length=64, pattern=r"^[^\x00]*$")] = None,
    ) -> list[dict[str, Any]]:
        """Compliance reads, newest first; ``before_id`` pages back."""
        return await list_access(db_session, limit=limit, before_id=before_id, actor=actor)

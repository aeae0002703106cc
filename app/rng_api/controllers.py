"""HTTP routes of the RNG service: a round's commitment and seed, algorithms, verification."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_200_OK

from app.accounts.auth import PUBLIC_OPT_KEY
from app.api.strict import strict_body
from app.errors import UnprocessableError
from app.rng_api.schemas import AlgorithmRead, RoundRead, VerifyRequest, VerifyResult
from rng.algorithms import ALGORITHMS
from rng.service import RngService
from rng.verification import VerificationError, verify_round

__all__ = ("RngController",)


class RngController(Controller):
    """Public randomness records: anyone can check a round once it is revealed."""

    path = "/rng"
    tags = ["rng"]

    @get("/rounds/{round_id:uuid}", operation_id="getRngRound")
    async def get_round(
        self, round_id: FromPath[uuid.UUID], rng_service: NamedDependency[RngService]
    ) -> RoundRead:
        """A round's commitment, version and client seeds; its seed once revealed."""
        return RoundRead.of(await rng_service.public_round(round_id))

    @get("/algorithms", operation_id="listRngAlgorithms", opt={PUBLIC_OPT_KEY: True})
    async def list_algorithms(self) -> list[AlgorithmRead]:
        """Every algorithm version rounds may use, with its formulas."""
        return [AlgorithmRead.of(algorithm) for algorithm in ALGORITHMS.values()]

    @post(
        "/verify",
        operation_id="verifyRngRound",
        status_code=HTTP_200_OK,
        opt={PUBLIC_OPT_KEY: True},
    )
    async def verify(
        self, request: Request[Any, Any, Any], data: JSONBody[VerifyRequest]
    ) -> VerifyResult:
        """Check a revealed seed against its commitment and recompute the deck order.

        Pure computation, no database: the same as ``python -m rng.verify``. A seed that does
        not match is refused with ``commitment_mismatch`` (422). Sizes and counts are JSON
        integers (``"104"`` or ``104.0`` is a 400, as on the command line).
        """
        data = await strict_body(request, VerifyRequest)
        try:
            result = verify_round(
                data.commitment,
                data.seed,
                data.client_seeds,
                data.version,
                data.deck_size,
                reshuffle_sizes=data.reshuffle_sizes,
                player_count=data.player_count,
            )
        except VerificationError as error:
            raise UnprocessableError(str(error), code=error.failure.value) from None
        return VerifyResult.of(result)

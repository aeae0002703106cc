"""A reader for the NIST CAVP HMAC_DRBG ``.rsp`` files kept in ``tests/data``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ("DATA_DIRECTORY", "CavpCase", "read_cases")

DATA_DIRECTORY = Path(__file__).resolve().parents[3] / "tests" / "data"


@dataclass(frozen=True, slots=True)
class CavpCase:
    """One ``COUNT`` block of an HMAC_DRBG response file."""

    group: str
    """The group's position and lengths, e.g. ``g03-perso256-addl0``; group headers repeat."""
    count: int
    """The ``COUNT`` value, 0..14 within its group."""
    entropy_input: bytes
    nonce: bytes
    personalization: bytes
    reseed_entropy_input: bytes | None
    """``EntropyInputReseed``; ``None`` in the no-reseed file."""
    reseed_additional_input: bytes | None
    """``AdditionalInputReseed``; ``None`` in the no-reseed file."""
    first_additional_input: bytes
    second_additional_input: bytes
    returned_bytes: bytes

    @property
    def case_id(self) -> str:
        return f"{self.group}-count{self.count}"


def read_cases(file_name: str) -> list[CavpCase]:
    """Parse every case of a CAVP file; lines end in CRLF, as NIST publishes them."""
    raw = (DATA_DIRECTORY / file_name).read_bytes()
    assert b"\r\n" in raw, "the CAVP file lost its CRLF line endings"
    cases: list[CavpCase] = []
    header: dict[str, str] = {}
    group_index = -1
    fields: list[tuple[str, str]] = []

    def flush() -> None:
        if not fields:
            return
        values: dict[str, list[str]] = {}
        for name, value in fields:
            values.setdefault(name, []).append(value)
        additional = values["AdditionalInput"]
        assert len(additional) == 2
        reseeds = "EntropyInputReseed" in values
        group = (
            f"g{group_index:02d}-perso{header['PersonalizationStringLen']}"
            f"-addl{header['AdditionalInputLen']}"
        )
        cases.append(
            CavpCase(
                group=group,
                count=int(values["COUNT"][0]),
                entropy_input=bytes.fromhex(values["EntropyInput"][0]),
                nonce=bytes.fromhex(values["Nonce"][0]),
                personalization=bytes.fromhex(values["PersonalizationString"][0]),
                reseed_entropy_input=(
                    bytes.fromhex(values["EntropyInputReseed"][0]) if reseeds else None
                ),
                reseed_additional_input=(
                    bytes.fromhex(values["AdditionalInputReseed"][0]) if reseeds else None
                ),
                first_additional_input=bytes.fromhex(additional[0]),
                second_additional_input=bytes.fromhex(additional[1]),
                returned_bytes=bytes.fromhex(values["ReturnedBits"][0]),
            )
        )
        fields.clear()

    for raw_line in raw.decode("ascii").split("\r\n"):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            flush()
            if line == "[SHA-256]":
                group_index += 1
            name, _, value = line.strip("[]").partition(" = ")
            header[name] = value
            continue
        name, _, value = line.partition(" =")
        if name == "COUNT":
            flush()
        fields.append((name, value.strip()))
    flush()
    return cases

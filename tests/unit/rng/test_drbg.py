"""HMAC_DRBG against the NIST CAVP vectors, plus its limits and misuse errors."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from rng.drbg import (
    MAX_BYTES_PER_REQUEST,
    MIN_ENTROPY_INPUT_LENGTH_BYTES,
    MIN_NONCE_LENGTH_BYTES,
    RESEED_INTERVAL,
    DrbgError,
    HmacDrbg,
)
from tests.unit.rng.cavp import CavpCase, read_cases

NO_RESEED_CASES = read_cases("HMAC_DRBG_SHA256_no_reseed.rsp")
RESEED_CASES = read_cases("HMAC_DRBG_SHA256_pr_false.rsp")
RETURNED_BYTES = 1024 // 8

ENTROPY = bytes(range(32))
NONCE = bytes(range(32, 48))


def test_every_cavp_case_is_loaded() -> None:
    assert len(NO_RESEED_CASES) == 240
    assert len(RESEED_CASES) == 240
    for cases in (NO_RESEED_CASES, RESEED_CASES):
        assert len({case.case_id for case in cases}) == 240
        # Both personalization and additional input are exercised, with and without.
        assert {bool(case.personalization) for case in cases} == {False, True}
        assert {bool(case.first_additional_input) for case in cases} == {False, True}
    assert all(case.reseed_entropy_input is None for case in NO_RESEED_CASES)
    assert all(case.reseed_entropy_input is not None for case in RESEED_CASES)


def _run_cavp_case(case: CavpCase) -> bytes:
    drbg = HmacDrbg(case.entropy_input, case.nonce, case.personalization)
    if case.reseed_entropy_input is not None:
        assert case.reseed_additional_input is not None
        drbg.reseed(case.reseed_entropy_input, case.reseed_additional_input)
    drbg.generate(RETURNED_BYTES, case.first_additional_input)
    return drbg.generate(RETURNED_BYTES, case.second_additional_input)


@pytest.mark.parametrize("case", NO_RESEED_CASES, ids=lambda case: case.case_id)
def test_cavp_no_reseed(case: CavpCase) -> None:
    assert _run_cavp_case(case) == case.returned_bytes


@pytest.mark.parametrize("case", RESEED_CASES, ids=lambda case: case.case_id)
def test_cavp_reseed(case: CavpCase) -> None:
    assert _run_cavp_case(case) == case.returned_bytes


class ReferenceHmacDrbg:
    """A literal transcription of SP 800-90A 10.1.2 on the standard library, with no caching."""

    def __init__(self, entropy: bytes, nonce: bytes, personalization: bytes = b"") -> None:
        self.key = b"\x00" * 32
        self.value = b"\x01" * 32
        self.update(entropy + nonce + personalization)

    def mac(self, message: bytes) -> bytes:
        return hmac.new(self.key, message, hashlib.sha256).digest()

    def update(self, data: bytes) -> None:
        self.key = self.mac(self.value + b"\x00" + data)
        self.value = self.mac(self.value)
        if data:
            self.key = self.mac(self.value + b"\x01" + data)
            self.value = self.mac(self.value)

    def generate(self, n_bytes: int, additional: bytes = b"") -> bytes:
        if additional:
            self.update(additional)
        output = b""
        while len(output) < n_bytes:
            self.value = self.mac(self.value)
            output += self.value
        self.update(additional)
        return output[:n_bytes]


@pytest.mark.parametrize("n_bytes", [0, 1, 31, 32, 33, 64, 1000, MAX_BYTES_PER_REQUEST])
def test_matches_reference_for_odd_sizes(n_bytes: int) -> None:
    drbg = HmacDrbg(ENTROPY, NONCE, b"personal")
    reference = ReferenceHmacDrbg(ENTROPY, NONCE, b"personal")
    for additional in (b"", b"extra", b""):
        output = drbg.generate(n_bytes, additional)
        assert len(output) == n_bytes
        assert output == reference.generate(n_bytes, additional)


def test_personalization_and_additional_input_change_the_output() -> None:
    plain = HmacDrbg(ENTROPY, NONCE).generate(32)
    assert HmacDrbg(ENTROPY, NONCE, b"p").generate(32) != plain
    assert HmacDrbg(ENTROPY, NONCE).generate(32, b"a") != plain
    assert HmacDrbg(ENTROPY, NONCE).generate(32) == plain


def test_zero_byte_request_still_advances_the_state() -> None:
    advanced = HmacDrbg(ENTROPY, NONCE)
    assert advanced.generate(0) == b""
    assert advanced.generate(32) != HmacDrbg(ENTROPY, NONCE).generate(32)


def test_reseed_counter_and_reseed_path() -> None:
    drbg = HmacDrbg(ENTROPY, NONCE)
    assert drbg.reseed_counter == 1
    drbg.generate(16)
    drbg.generate(16)
    assert drbg.reseed_counter == 3
    drbg.reseed(bytes(32), b"more")
    assert drbg.reseed_counter == 1
    untouched = HmacDrbg(ENTROPY, NONCE)
    untouched.generate(16)
    untouched.generate(16)
    assert drbg.generate(32) != untouched.generate(32)


def test_reseed_interval_forces_a_reseed() -> None:
    drbg = HmacDrbg(ENTROPY, NONCE, reseed_interval=2)
    drbg.generate(1)
    drbg.generate(1)
    with pytest.raises(DrbgError, match="reseed required"):
        drbg.generate(1)
    drbg.reseed(ENTROPY)
    assert len(drbg.generate(1)) == 1


@pytest.mark.parametrize("reseed_interval", [0, RESEED_INTERVAL + 1, True, 1.5])
def test_reseed_interval_cannot_exceed_the_standard(reseed_interval: object) -> None:
    with pytest.raises(DrbgError, match="reseed_interval"):
        HmacDrbg(ENTROPY, NONCE, reseed_interval=reseed_interval)  # type: ignore[arg-type]


@pytest.mark.parametrize("n_bytes", [-1, MAX_BYTES_PER_REQUEST + 1])
def test_request_size_limit(n_bytes: int) -> None:
    with pytest.raises(DrbgError, match="n_bytes"):
        HmacDrbg(ENTROPY, NONCE).generate(n_bytes)


@pytest.mark.parametrize("n_bytes", [1.0, "1", True])
def test_request_size_must_be_an_int(n_bytes: object) -> None:
    with pytest.raises(DrbgError, match="n_bytes"):
        HmacDrbg(ENTROPY, NONCE).generate(n_bytes)  # type: ignore[arg-type]


def test_entropy_and_nonce_minimum_lengths() -> None:
    with pytest.raises(DrbgError, match="entropy_input"):
        HmacDrbg(bytes(MIN_ENTROPY_INPUT_LENGTH_BYTES - 1), NONCE)
    with pytest.raises(DrbgError, match="nonce"):
        HmacDrbg(ENTROPY, bytes(MIN_NONCE_LENGTH_BYTES - 1))
    with pytest.raises(DrbgError, match="entropy_input"):
        HmacDrbg(ENTROPY, NONCE).reseed(bytes(MIN_ENTROPY_INPUT_LENGTH_BYTES - 1))


@pytest.mark.parametrize(
    "call",
    [
        lambda: HmacDrbg(bytearray(32), NONCE),  # type: ignore[arg-type]
        lambda: HmacDrbg(ENTROPY, "n" * 16),  # type: ignore[arg-type]
        lambda: HmacDrbg(ENTROPY, NONCE, None),  # type: ignore[arg-type]
        lambda: HmacDrbg(ENTROPY, NONCE).generate(1, "x"),  # type: ignore[arg-type]
        lambda: HmacDrbg(ENTROPY, NONCE).reseed(ENTROPY, memoryview(b"x")),  # type: ignore[arg-type]
    ],
)
def test_inputs_must_be_bytes(call: object) -> None:
    with pytest.raises(DrbgError, match="must be bytes"):
        call()  # type: ignore[operator]


def test_repr_hides_the_state() -> None:
    drbg = HmacDrbg(ENTROPY, NONCE)
    assert repr(drbg) == "HmacDrbg(reseed_counter=1)"

"""Sealing seeds at rest: round trips, binding to the round, rotation and keyring parsing."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from rng.sealing import (
    MAX_ASSOCIATED_DATA_LENGTH_BYTES,
    MAX_KEYS,
    MAX_SEED_LENGTH_BYTES,
    MIN_SEED_LENGTH_BYTES,
    NONCE_LENGTH_BYTES,
    TAG_LENGTH_BYTES,
    SealedSeed,
    SealingError,
    SeedSealer,
    parse_keyring,
)
from rng.streams import new_round_seed

OLD_KEY = bytes(range(32))
NEW_KEY = bytes(range(100, 132))
ROUND_7 = b"round:7"
ROUND_8 = b"round:8"


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_round_trip() -> None:
    sealer = SeedSealer({"k1": OLD_KEY}, "k1")
    seed = new_round_seed()
    sealed = sealer.seal(seed, ROUND_7)
    assert sealed.key_id == "k1"
    assert len(sealed.nonce) == NONCE_LENGTH_BYTES
    assert len(sealed.ciphertext) == len(seed) + TAG_LENGTH_BYTES
    assert seed not in sealed.ciphertext
    assert sealer.open(sealed, ROUND_7) == seed


def test_each_seal_uses_a_fresh_nonce() -> None:
    sealer = SeedSealer({"k1": OLD_KEY}, "k1")
    seed = new_round_seed()
    first, second = sealer.seal(seed, ROUND_7), sealer.seal(seed, ROUND_7)
    assert first.nonce != second.nonce
    assert first.ciphertext != second.ciphertext


def test_wrong_associated_data_does_not_open() -> None:
    sealer = SeedSealer({"k1": OLD_KEY}, "k1")
    sealed = sealer.seal(new_round_seed(), ROUND_7)
    with pytest.raises(SealingError, match="wrong associated data"):
        sealer.open(sealed, ROUND_8)


def test_wrong_key_material_does_not_open() -> None:
    sealed = SeedSealer({"k1": OLD_KEY}, "k1").seal(new_round_seed(), ROUND_7)
    impostor = SeedSealer({"k1": NEW_KEY}, "k1")
    with pytest.raises(SealingError, match="did not open with key 'k1'"):
        impostor.open(sealed, ROUND_7)


def test_relabelled_key_id_does_not_open() -> None:
    # Same key material under two ids: the key id is authenticated too.
    sealer = SeedSealer({"k1": OLD_KEY, "k1-copy": OLD_KEY}, "k1")
    sealed = sealer.seal(new_round_seed(), ROUND_7)
    moved = dataclasses.replace(sealed, key_id="k1-copy")
    with pytest.raises(SealingError, match="did not open"):
        sealer.open(moved, ROUND_7)


def test_tampered_ciphertext_does_not_open() -> None:
    sealer = SeedSealer({"k1": OLD_KEY}, "k1")
    sealed = sealer.seal(new_round_seed(), ROUND_7)
    flipped = bytes([sealed.ciphertext[0] ^ 1]) + sealed.ciphertext[1:]
    with pytest.raises(SealingError, match="tampered"):
        sealer.open(dataclasses.replace(sealed, ciphertext=flipped), ROUND_7)


def test_rotation() -> None:
    before = SeedSealer({"k1": OLD_KEY}, "k1")
    old_sealed = before.seal(seed_one := new_round_seed(), ROUND_7)
    after = SeedSealer({"k1": OLD_KEY, "k2": NEW_KEY}, "k2")
    new_sealed = after.seal(seed_two := new_round_seed(), ROUND_8)
    assert new_sealed.key_id == "k2"
    assert after.open(old_sealed, ROUND_7) == seed_one
    assert after.open(new_sealed, ROUND_8) == seed_two
    assert after.key_ids == ("k1", "k2")
    assert after.active_key_id == "k2"


def test_unknown_key_id() -> None:
    sealed = SeedSealer({"k1": OLD_KEY}, "k1").seal(new_round_seed(), ROUND_7)
    retired = SeedSealer({"k2": NEW_KEY}, "k2")
    with pytest.raises(SealingError, match="unknown key id 'k1'"):
        retired.open(sealed, ROUND_7)


def test_repr_shows_no_key_material() -> None:
    sealer = SeedSealer({"k1": OLD_KEY}, "k1")
    assert repr(sealer) == "SeedSealer(key_ids=('k1',), active_key_id='k1')"


@pytest.mark.parametrize(
    ("keys", "active", "message"),
    [
        ({}, "k1", "non-empty mapping"),
        ({"k1": OLD_KEY}, "k2", "not in the keyring"),
        ({"k1": OLD_KEY[:16]}, "k1", "must be 32 bytes"),
        ({"k1": "x" * 32}, "k1", "must be 32 bytes"),
        ({"bad id": OLD_KEY}, "bad id", "key id must be"),
        ({"k" * 33: OLD_KEY}, "k" * 33, "key id must be"),
        ({f"k{index}": OLD_KEY for index in range(MAX_KEYS + 1)}, "k1", "at most 64 keys"),
    ],
)
def test_bad_sealer_configuration(keys: dict[str, bytes], active: str, message: str) -> None:
    with pytest.raises(SealingError, match=message):
        SeedSealer(keys, active)


def test_bad_seal_and_open_arguments() -> None:
    sealer = SeedSealer({"k1": OLD_KEY}, "k1")
    with pytest.raises(SealingError, match="associated_data must be 1"):
        sealer.seal(new_round_seed(), b"")
    with pytest.raises(SealingError, match=r"seed must be 16\.\.64 bytes"):
        sealer.seal(b"short", ROUND_7)
    with pytest.raises(SealingError, match="seed must be bytes"):
        sealer.seal("text", ROUND_7)  # type: ignore[arg-type]
    with pytest.raises(SealingError, match="must be a SealedSeed"):
        sealer.open(("k1", b"", b""), ROUND_7)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"key_id": ""}, "key id must be"),
        ({"nonce": bytes(11)}, "nonce must be 12..12 bytes"),
        ({"ciphertext": bytes(31)}, "ciphertext must be 32..80 bytes"),
        ({"ciphertext": bytes(81)}, "ciphertext must be 32..80 bytes"),
        ({"nonce": bytes(13)}, "nonce must be 12..12 bytes"),
        ({"ciphertext": bytearray(48)}, "ciphertext must be bytes"),
    ],
)
def test_sealed_seed_validates_its_fields(fields: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"key_id": "k1", "nonce": bytes(12), "ciphertext": bytes(48)}
    values.update(fields)
    with pytest.raises(SealingError, match=message):
        SealedSeed(**values)  # type: ignore[arg-type]


def test_parse_keyring() -> None:
    text = f" k1:{b64(OLD_KEY)} , k2 : {b64(NEW_KEY)} "
    assert parse_keyring(text) == {"k1": OLD_KEY, "k2": NEW_KEY}
    sealer = SeedSealer.from_settings(f"k1:{b64(OLD_KEY)},k2:{b64(NEW_KEY)}", "k2")
    assert sealer.key_ids == ("k1", "k2")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "keyring setting is empty"),
        ("   ", "keyring setting is empty"),
        (b64(OLD_KEY), "entry 1 has no ':'"),
        (f"k1:{b64(OLD_KEY)},", "entry 2 has no ':'"),
        (f"k1:{b64(OLD_KEY)},k1:{b64(NEW_KEY)}", "entry 2 repeats key id 'k1'"),
        (f"k1:{b64(OLD_KEY)[:-2]}", r"entry 1 \('k1'\) is not valid base64"),
        ("k1:not*base64", r"entry 1 \('k1'\) is not valid base64"),
        # a stray character is not skipped: the key would still decode to 32 bytes
        (f"k1:{b64(OLD_KEY)[:4]}*{b64(OLD_KEY)[4:]}", r"entry 1 \('k1'\) is not valid base64"),
        (f"k1:{b64(OLD_KEY[:16])}", "decodes to 16 bytes, expected 32"),
        (f"bad id:{b64(OLD_KEY)}", "key id must be"),
        (f":{b64(OLD_KEY)}", "key id must be"),
    ],
)
def test_parse_keyring_errors_never_show_keys(text: str, message: str) -> None:
    with pytest.raises(SealingError, match=message) as caught:
        parse_keyring(text)
    assert b64(OLD_KEY)[:8] not in str(caught.value)
    assert b64(NEW_KEY)[:8] not in str(caught.value)


def test_seeds_and_associated_data_at_their_length_limits() -> None:
    sealer = SeedSealer({"k1": OLD_KEY}, "k1")
    for seed in (bytes(MIN_SEED_LENGTH_BYTES), bytes(range(MAX_SEED_LENGTH_BYTES))):
        associated_data = b"r" * MAX_ASSOCIATED_DATA_LENGTH_BYTES
        assert sealer.open(sealer.seal(seed, associated_data), associated_data) == seed
    with pytest.raises(SealingError, match=r"seed must be 16\.\.64 bytes, got 65"):
        sealer.seal(bytes(MAX_SEED_LENGTH_BYTES + 1), ROUND_7)
    with pytest.raises(SealingError, match=r"associated_data must be 1\.\.1024 bytes, got 1025"):
        sealer.seal(new_round_seed(), b"r" * (MAX_ASSOCIATED_DATA_LENGTH_BYTES + 1))
    sealed = sealer.seal(new_round_seed(), ROUND_7)
    with pytest.raises(SealingError, match=r"associated_data must be 1\.\.1024 bytes"):
        sealer.open(sealed, b"r" * (MAX_ASSOCIATED_DATA_LENGTH_BYTES + 1))

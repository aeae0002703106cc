"""Wiring the RNG service into the app: the sealer from settings, refusals as API errors."""

from __future__ import annotations

import base64

import pytest

from app.config import DEV_SEED_KEYRING, ConfigurationError, Settings
from app.rng_api import RngServices, app_error_of
from app.rng_api.errors import STATUS_BY_CODE
from rng.contract import RngErrorCode, RngServiceError
from rng.sealing import SealedSeed
from rng.service import RngService

KEY_A = base64.b64encode(bytes(range(32))).decode()
KEY_B = base64.b64encode(bytes(range(1, 33))).decode()


def settings(**values: object) -> Settings:
    return Settings(**{"env": "test", **values})  # type: ignore[arg-type]


def test_the_sealer_defaults_to_the_first_key_of_the_keyring() -> None:
    services = RngServices.from_settings(settings(seed_keyring=f"a:{KEY_A},b:{KEY_B}"))
    assert services.sealer.active_key_id == "a"
    assert services.sealer.key_ids == ("a", "b")
    rotated = RngServices.from_settings(
        settings(seed_keyring=f"a:{KEY_A},b:{KEY_B}", seed_active_key_id="b")
    )
    assert rotated.sealer.active_key_id == "b"
    sealed = services.sealer.seal(bytes(32), b"round")
    assert isinstance(sealed, SealedSeed)
    assert rotated.sealer.open(sealed, b"round") == bytes(32)


def test_the_development_keyring_works() -> None:
    assert RngServices.from_settings(settings(seed_keyring=DEV_SEED_KEYRING)).sealer.key_ids == (
        "dev1",
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"seed_keyring": "a:not-base64!"}, "not valid base64"),
        ({"seed_keyring": f"a:{KEY_A}", "seed_active_key_id": "z"}, "not in the keyring"),
        ({"seed_keyring": "a:" + base64.b64encode(b"short").decode()}, "decodes to 5 bytes"),
    ],
)
def test_an_unusable_keyring_stops_the_app(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        RngServices.from_settings(settings(**values))
    assert KEY_A not in str(caught.value)


def test_fixed_decks_follow_the_setting() -> None:
    assert RngServices.from_settings(settings(allow_fixed_decks=True)).allow_fixed is True
    assert RngServices.from_settings(settings()).allow_fixed is False
    services = RngServices.from_settings(settings())
    service = services.for_session(object())  # type: ignore[arg-type]
    assert isinstance(service, RngService)
    assert repr(service) == "RngService(allow_fixed=False)"


def test_every_refusal_has_a_4xx_status() -> None:
    assert set(STATUS_BY_CODE) == set(RngErrorCode)
    assert all(400 <= status < 500 for status in STATUS_BY_CODE.values())


def test_refusals_keep_their_code_message_and_details() -> None:
    error = app_error_of(
        RngServiceError(RngErrorCode.ROUND_NOT_FOUND, "no round has this id", {"round_id": "x"})
    )
    assert (error.status_code, error.code, error.message, error.details) == (
        404,
        "round_not_found",
        "no round has this id",
        {"round_id": "x"},
    )
    assert app_error_of(RngServiceError(RngErrorCode.CLIENT_SEEDS_CLOSED, "m")).status_code == 409


def test_production_never_allows_fixed_decks_even_if_the_setting_slipped_through() -> None:
    unchecked = Settings.model_construct(
        env="production",
        allow_fixed_decks=True,
        seed_keyring=DEV_SEED_KEYRING,
        seed_active_key_id=None,
    )
    assert RngServices.from_settings(unchecked).allow_fixed is False

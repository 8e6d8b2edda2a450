"""Where the console and the schema registry run beside the broker find it: the
``--listen`` shorthand, a ``--config`` file's listeners, or the default."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from headrace._beside_broker import local_bootstrap


def _args(listen: str | None = None, config: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(listen=listen, config=str(config) if config else None)


def test_listen_shorthand_wins() -> None:
    assert local_bootstrap(_args(listen="127.0.0.1:19092")) == "127.0.0.1:19092"


def test_default_without_listeners() -> None:
    assert local_bootstrap(_args()) == "127.0.0.1:9092"


def test_first_plaintext_listener_of_the_config(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text(
        "listeners=SASL_PLAINTEXT://127.0.0.1:19093,INTERNAL://0.0.0.0:19094\n"
        "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT\n"
    )
    assert local_bootstrap(_args(config=config)) == "127.0.0.1:19094"


def test_no_plaintext_listener_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("listeners=SASL_PLAINTEXT://127.0.0.1:19093\n")
    with pytest.raises(ValueError, match="need a PLAINTEXT one"):
        local_bootstrap(_args(config=config))

"""bot/store/migrate.py: the head revision read without Alembic is Alembic's own, and a
folder with two heads, or none, says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from bot.store import migrate


def test_the_head_read_from_the_files_is_alembics() -> None:
    alembics = ScriptDirectory.from_config(migrate.alembic_config()).get_current_head()
    assert migrate.head_revision() == alembics is not None


def _write(folder: Path, revision: str, down: str | None, annotated: bool = True) -> None:
    kind = ": str | None" if annotated else ""
    (folder / f"{revision}_x.py").write_text(
        f'"""A migration."""\nrevision{kind} = "{revision}"\ndown_revision{kind} = {down!r}\n'
    )


@pytest.fixture
def versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A versions folder of the test's own, read by head_revision."""
    (tmp_path / "versions").mkdir()
    monkeypatch.setattr(migrate, "ALEMBIC_DIR", tmp_path)
    migrate.head_revision.cache_clear()
    yield tmp_path / "versions"
    migrate.head_revision.cache_clear()


def test_the_head_of_a_chain_and_of_a_merge(versions: Path) -> None:
    _write(versions, "a", None)
    _write(versions, "b", "a", annotated=False)
    assert migrate.head_revision() == "b"
    migrate.head_revision.cache_clear()
    _write(versions, "c", "a")
    (versions / "d_x.py").write_text('revision = "d"\ndown_revision = ("b", "c")\n')
    assert migrate.head_revision() == "d"


def test_several_heads_are_an_error_and_none_is_none(versions: Path) -> None:
    assert migrate.head_revision() is None
    migrate.head_revision.cache_clear()
    _write(versions, "a", None)
    _write(versions, "b", "a")
    _write(versions, "c", "a")
    with pytest.raises(RuntimeError, match="several heads: b, c"):
        migrate.head_revision()


def test_the_developers_alembic_ini_points_at_the_packaged_migrations() -> None:
    """`alembic upgrade head` from a checkout runs the migrations the package ships."""
    from alembic.config import Config

    ini = Config(str(Path(__file__).resolve().parents[3] / "alembic.ini"))
    location = ini.get_main_option("script_location")
    assert location is not None and Path(location).resolve() == migrate.ALEMBIC_DIR
    assert ScriptDirectory.from_config(ini).get_current_head() == migrate.head_revision()

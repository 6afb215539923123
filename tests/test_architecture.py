"""The dependency rules of docs/architecture.md, checked on the source (imports read with `ast`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # read from the source: in `make check`

ROOT = Path(__file__).resolve().parents[1]
CHAT_SDKS = ("slack_sdk", "slack_bolt", "microsoft_teams")
PURE_MODULES = [
    "adapters/surfaces/slack/blocks.py",
    "adapters/surfaces/slack/messages.py",
    "adapters/surfaces/slack/modals.py",
    "adapters/surfaces/slack/filetypes.py",
    "adapters/surfaces/slack/scheme.py",
    "adapters/surfaces/slack/parse.py",
    "adapters/surfaces/slack/text.py",
    "adapters/surfaces/teams/cards.py",
    "adapters/surfaces/teams/inputs.py",
    "adapters/surfaces/teams/text.py",
    "adapters/surfaces/teams/actions.py",
    "adapters/surfaces/teams/stop_card.py",
    "adapters/surfaces/console/render.py",
    "adapters/doors/admin/charts.py",
    "adapters/doors/admin/export.py",
]


def _python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _uses(names: set[str], package: str) -> bool:
    return any(name == package or name.startswith(package + ".") for name in names)


@pytest.mark.parametrize("path", _python_files("bot"), ids=str)
def test_the_core_knows_no_chat_platform(path: Path) -> None:
    imports = _imports(path)
    for package in ("adapters", "aiohttp", *CHAT_SDKS):
        assert not _uses(imports, package), f"{path} imports {package}"


@pytest.mark.parametrize("path", _python_files("bot") + _python_files("adapters"), ids=str)
def test_sqlalchemy_only_in_the_store_and_anthropic_only_in_the_agent(path: Path) -> None:
    relative = path.relative_to(ROOT).as_posix()
    imports = _imports(path)
    if not relative.startswith("bot/store/"):
        assert not _uses(imports, "sqlalchemy"), f"{relative} imports sqlalchemy"
    if relative != "bot/agent/provider.py":
        assert not _uses(imports, "anthropic"), f"{relative} imports anthropic"


@pytest.mark.parametrize("path", _python_files("bot"), ids=str)
def test_the_mcp_and_a2a_client_sdks_only_in_the_tool_sources(path: Path) -> None:
    relative = path.relative_to(ROOT).as_posix()
    if not relative.startswith("bot/tool_sources/"):
        imports = _imports(path)
        for package in ("mcp", "mcp_types", "a2a"):
            assert not _uses(imports, package), f"{relative} imports {package}"


@pytest.mark.parametrize("path", _python_files("clients/python"), ids=str)
def test_the_client_imports_nothing_of_the_server(path: Path) -> None:
    """hitl-client installs without the server (tests/clients/python/test_distribution.py)."""
    imports = _imports(path)
    for package in ("bot", "adapters", "httpx2"):
        assert not _uses(imports, package), f"{path.relative_to(ROOT)} imports {package}"


SURFACES = ("slack", "teams", "console")
DOORS = ("api", "mcp", "a2a", "ag_ui", "admin")


def test_adapters_holds_packages_only() -> None:
    """Every module of adapters/ sits in a package named for its part of the architecture."""
    loose = [p.name for p in (ROOT / "adapters").glob("*.py") if p.name != "__init__.py"]
    assert loose == []
    assert {p.name for p in (ROOT / "adapters").iterdir() if (p / "__init__.py").exists()} == {
        "surfaces", "doors", "serve", "ops", "cli"}  # fmt: skip


def _part(path: Path) -> tuple[str, str]:
    """('surfaces', 'slack') for adapters/surfaces/slack/app.py; ('doors', '') for a module of
    the base door itself (adapters/doors/loading.py)."""
    parts = path.relative_to(ROOT / "adapters").parts
    return parts[0], parts[1] if len(parts) > 2 else ""


@pytest.mark.parametrize("path", _python_files("adapters/surfaces"), ids=str)
def test_a_surface_never_imports_another_surface_or_a_door(path: Path) -> None:
    _, own = _part(path)
    imports = _imports(path)
    for other in SURFACES:
        if other != own:
            assert not _uses(imports, f"adapters.surfaces.{other}"), f"{path} imports {other}"
    assert not _uses(imports, "adapters.doors"), f"{path} imports a door"


@pytest.mark.parametrize("path", _python_files("adapters/doors"), ids=str)
def test_a_door_never_imports_another_door_or_a_surface(path: Path) -> None:
    _, own = _part(path)
    imports = _imports(path)
    for other in DOORS:
        if other != own:
            assert not _uses(imports, f"adapters.doors.{other}"), f"{path} imports {other}"
    assert not _uses(imports, "adapters.surfaces"), f"{path} imports a surface"


@pytest.mark.parametrize("relative", PURE_MODULES)
def test_rendering_and_parsing_are_pure(relative: str) -> None:
    path = ROOT / relative
    tree = ast.parse(path.read_text(), relative)
    awaits = [n for n in ast.walk(tree) if isinstance(n, ast.Await | ast.AsyncFunctionDef)]
    assert not awaits, f"{relative} awaits"
    imports = _imports(path)
    for io in ("aiohttp", "bot.store", "slack_sdk.web", "slack_bolt", "sqlalchemy", "asyncio"):
        assert not _uses(imports, io), f"{relative} imports {io}"


def _public_classes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    return [n.name for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")]


def test_no_two_public_classes_share_a_name() -> None:
    """One name, one thing, in the server's packages (the client, clients/python/, mirrors the
    HTTP API's wire types by name on purpose, and is a distribution of its own)."""
    where: dict[str, list[str]] = {}
    for path in _python_files("bot") + _python_files("adapters"):
        relative = path.relative_to(ROOT).as_posix()
        for name in _public_classes(path):
            where.setdefault(name, []).append(relative)
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}

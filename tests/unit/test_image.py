"""The image is built from what the Dockerfile copies and from nothing else.

There is no Docker engine here, so the test does the part of `docker build` that can go wrong in this repository:
it reads the Dockerfile, lays out the files its COPY lines take from the build context (the repository less
.dockerignore, matched as Docker's own Python client matches it) as they would sit in the image, builds the wheel
its `RUN pip install` builds from that tree alone, and runs the image's entrypoint from the wheel's files. Anything
in the Dockerfile it does not understand fails the test rather than being guessed at."""

import json
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pytest
from docker.utils.build import exclude_paths

from lakeledger.settings import variable_names

ROOT = Path(__file__).resolve().parents[2]

# instructions that take nothing from the build context; any other (ADD, ONBUILD, ...) is refused
CONTEXT_FREE = {"ARG", "LABEL", "EXPOSE", "USER", "CMD", "ENTRYPOINT", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
                "VOLUME"}
# in a COPY's words: variables, wildcards, quoting, here-documents; none of them is interpreted here
UNINTERPRETED = re.compile(r"[$*?\[\]<>\"'\\]")


class Unsupported(AssertionError):
    """The Dockerfile does something this test does not model: teach the test, or keep the Dockerfile simple."""


@dataclass(frozen=True)
class Instruction:
    line: int
    keyword: str
    arguments: str


@dataclass
class Image:
    """What the build leaves behind that this test checks: the files copied in, where `pip install` ran, and how
    the container starts."""

    root: Path
    installed_from: list[PurePosixPath] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)

    def path(self, inside: PurePosixPath) -> Path:
        return self.root / inside.relative_to("/")


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions: comment and blank lines dropped, backslash continuations joined."""
    found: list[Instruction] = []
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if re.fullmatch(r"#\s*escape\s*=.*", stripped, re.IGNORECASE) and not found:
            raise Unsupported(f"line {number}: a parser directive changes the escape character")
        if not stripped or stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, arguments = (pending + stripped).partition(" ")
        found.append(Instruction(start, keyword.upper(), arguments.strip()))
        pending = ""
    if pending:
        raise Unsupported(f"line {start}: the Dockerfile ends inside a continued line")
    return found


def _words(instruction: Instruction) -> list[str]:
    if instruction.arguments.startswith("["):  # the exec (JSON) form
        words = json.loads(instruction.arguments)
        if not (isinstance(words, list) and all(isinstance(w, str) for w in words)):
            raise Unsupported(f"line {instruction.line}: {instruction.keyword} is not a JSON list of strings")
        return words
    return instruction.arguments.split()


def _context_path(word: str, instruction: Instruction) -> PurePosixPath:
    path = PurePosixPath(word)
    if path.is_absolute() or ".." in path.parts:
        raise Unsupported(f"line {instruction.line}: {word} is outside the build context")
    return path


def _copy(instruction: Instruction, context: set[PurePosixPath], workdir: PurePosixPath, image: Image) -> None:
    words = _words(instruction)
    if any(w.startswith("--") for w in words):  # --from, --chown, --link, --parents, --exclude, ...
        raise Unsupported(f"line {instruction.line}: COPY with options: {instruction.arguments}")
    if len(words) < 2 or any(UNINTERPRETED.search(w) for w in words):
        raise Unsupported(f"line {instruction.line}: COPY {instruction.arguments}")
    *sources, destination = words
    if len(sources) > 1 and not destination.endswith("/"):
        raise Unsupported(f"line {instruction.line}: several sources need a destination ending in /")
    target = workdir / destination  # an absolute destination replaces the working directory
    if ".." in target.parts:
        raise Unsupported(f"line {instruction.line}: {destination}")
    into_folder = destination.endswith("/") or image.path(target).is_dir()
    for source in [_context_path(w, instruction) for w in sources]:
        if source not in context and source != PurePosixPath("."):
            raise AssertionError(f"line {instruction.line}: COPY {source}: not in the build context")
        if (ROOT / source).is_dir():  # a folder's contents go into the destination, not the folder itself
            copies = {f: target / f.relative_to(source) for f in context
                      if source in f.parents and (ROOT / f).is_file()}
        else:
            copies = {source: target / source.name if into_folder else target}
        for origin, inside in copies.items():
            image.path(inside).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / origin, image.path(inside))


def _pip_install_targets(instruction: Instruction, workdir: PurePosixPath) -> list[PurePosixPath]:
    if "--mount" in instruction.arguments:
        raise Unsupported(f"line {instruction.line}: RUN --mount reads the build context")
    words = _words(instruction) if instruction.arguments.startswith("[") else shlex.split(instruction.arguments)
    targets: list[PurePosixPath] = []
    for i, word in enumerate(words[:-1]):
        if word.rsplit("/", 1)[-1].startswith("pip") and words[i + 1] == "install":
            for argument in words[i + 2:]:
                if argument in {"&&", ";", "||", "|"}:
                    break
                if argument.startswith("-"):
                    if argument not in {"--no-cache-dir", "--no-deps", "--quiet", "-q"}:  # flags without a value
                        raise Unsupported(f"line {instruction.line}: pip install {argument}")
                    continue
                targets.append(workdir / argument)
    return targets


def build_image(dockerfile: Path, root: Path) -> Image:
    """Lays out under `root` the files the Dockerfile copies into the image, and notes what it installs and runs."""
    patterns: list[str] = []
    ignore = ROOT / ".dockerignore"
    if ignore.exists():  # read as Docker's Python client reads it before matching
        patterns = [line.strip() for line in ignore.read_text().splitlines()
                    if line.strip() and not line.strip().startswith("#")]
    context = {PurePosixPath(p) for p in exclude_paths(str(ROOT), patterns, dockerfile=dockerfile.name)}
    image, workdir, stages = Image(root), PurePosixPath("/"), 0
    for instruction in instructions(dockerfile.read_text()):
        if instruction.keyword == "FROM":
            stages += 1
            if stages > 1:
                raise Unsupported(f"line {instruction.line}: a second stage")
        elif instruction.keyword == "WORKDIR":
            if UNINTERPRETED.search(instruction.arguments):
                raise Unsupported(f"line {instruction.line}: WORKDIR {instruction.arguments}")
            workdir = workdir / instruction.arguments
        elif instruction.keyword == "COPY":
            _copy(instruction, context, workdir, image)
        elif instruction.keyword == "RUN":
            image.installed_from += _pip_install_targets(instruction, workdir)
        elif instruction.keyword == "ENV":
            words = shlex.split(instruction.arguments)
            if "=" not in words[0]:  # the old form, ENV NAME value
                words = [f"{words[0]}={' '.join(words[1:])}"]
            for word in words:
                name, _, value = word.partition("=")
                image.env[name] = value
        elif instruction.keyword in ("ENTRYPOINT", "CMD"):
            if not instruction.arguments.startswith("["):
                raise Unsupported(f"line {instruction.line}: {instruction.keyword} in shell form")
            setattr(image, instruction.keyword.lower(), _words(instruction))
        elif instruction.keyword not in CONTEXT_FREE:
            raise Unsupported(f"line {instruction.line}: {instruction.keyword} {instruction.arguments}")
    return image


# Run by the venv's Python without its site hooks, so that the editable install's import finder (which would
# quietly supply any module the wheel lacks from the checkout) is never loaded: the wheel's files come first, the
# venv's site-packages give the dependencies.
FROM_THE_WHEEL = r"""
import contextlib, importlib, importlib.metadata, io, json, sys
from pathlib import Path

unpacked, command, out = Path(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3])
sys.path[:0] = [str(unpacked)]
sys.path += sys.argv[4:]
[metadata] = unpacked.glob("*.dist-info")
[script] = importlib.metadata.PathDistribution(metadata).entry_points.select(group="console_scripts",
                                                                             name=command[0])
helps = {}
for argv in ([*command[1:], "--help"], ["--help"]):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            script.load()(argv)
        except SystemExit as e:
            helps[" ".join(argv)] = {"exit": e.code, "printed": printed.getvalue()}
modules = sorted(str(p.relative_to(unpacked).with_suffix("")).replace("/", ".").removesuffix(".__init__")
                 for p in (unpacked / "lakeledger").rglob("*.py"))
for name in modules:
    importlib.import_module(name)
from lakeledger.console import STATIC
from lakeledger.migrations import sql_files
out.write_text(json.dumps({
    "helps": helps,
    "files": {n: getattr(m, "__file__", None) or "" for n, m in sys.modules.items()
              if n.split(".")[0] == "lakeledger"},
    "migrations": [name for name, _ in sql_files()],
    "static": sorted(p.name for p in STATIC.iterdir()),
}))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Image, Path]:
    """The image's files and the wheel `pip install` builds from them, offline, with the venv's setuptools."""
    tmp = tmp_path_factory.mktemp("image")
    image = build_image(ROOT / "Dockerfile", tmp / "root")
    assert len(image.installed_from) == 1, image.installed_from  # the one package the image installs
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--check-build-dependencies", "--wheel-dir", str(tmp / "wheel"),
                    str(image.path(image.installed_from[0]))], check=True, timeout=300)
    [wheel] = (tmp / "wheel").glob("lakeledger-*.whl")
    return image, wheel


def _tracked(folder: str) -> set[str]:
    listed = subprocess.run(["git", "ls-files", "-z", folder], cwd=ROOT, check=True, capture_output=True, text=True)
    return set(listed.stdout.split("\0")) - {""}


def test_the_image_holds_the_package_and_its_metadata_without_byte_code(built):
    image, _ = built
    copied = {str(PurePosixPath("/") / p.relative_to(image.root)) for p in image.root.rglob("*") if p.is_file()}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    expected = {"/app/pyproject.toml", f"/app/{project['readme']}", *(f"/app/{n}" for n in _tracked("lakeledger"))}
    assert sorted(expected - copied) == []
    assert [p for p in copied if "__pycache__" in p or p.endswith(".pyc")] == []  # .dockerignore keeps them out
    assert image.installed_from == [PurePosixPath("/app")]
    assert (image.entrypoint, image.cmd) == (["lakeledger"], ["serve"])


def test_the_settings_the_image_sets_exist(built):
    image, _ = built
    assert image.env["LAKELEDGER__LISTEN_PORT"] == "8181"  # the port docker-compose.yml publishes
    assert sorted({n for n in image.env if n.upper().startswith("LAKELEDGER__")} - set(variable_names())) == []


def test_the_wheel_built_from_the_images_files_carries_every_module_and_data_file(built):
    _, wheel = built
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = _tracked("lakeledger")
    assert {n for n in tracked if n.endswith(".sql")} and {n for n in tracked if "/static/" in n}
    assert sorted(tracked - names) == []
    # nothing else is packaged: no tests, benchmarks or scripts as top-level packages
    assert {n.split("/")[0] for n in names} == {"lakeledger", wheel.name.split("-py")[0] + ".dist-info"}


def test_the_images_entrypoint_runs_from_the_wheel_alone(built, tmp_path):
    image, wheel = built
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    result = tmp_path / "result.json"
    site_packages = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    subprocess.run([sys.executable, "-I", "-S", "-c", FROM_THE_WHEEL, str(unpacked),
                    json.dumps([*image.entrypoint, *image.cmd]), str(result), *site_packages],
                   cwd=tmp_path, check=True, timeout=300)
    ran = json.loads(result.read_text())
    # `lakeledger --help` and `lakeledger serve --help`, the container's command, through the wheel's script
    assert {argv: (h["exit"], h["printed"].startswith("usage: lakeledger")) for argv, h in ran["helps"].items()} \
        == {"--help": (0, True), "serve --help": (0, True)}
    # every module of the package imported, each from the wheel's files, none from the checkout
    assert {"lakeledger.cli", "lakeledger.bootstrap", "lakeledger.api.app"} <= set(ran["files"])
    assert [n for n, f in ran["files"].items() if not Path(f).is_relative_to(unpacked)] == []
    assert len(ran["files"]) >= len([n for n in _tracked("lakeledger") if n.endswith(".py")])
    # the data files are found where the package looks for them
    assert ran["migrations"] == sorted(Path(n).name for n in _tracked("lakeledger/migrations") if n.endswith(".sql"))
    assert ran["static"] == sorted(Path(n).name for n in _tracked("lakeledger/console/static"))

"""PBS select / place syntax: values, units, place specs, caret errors, models."""

from __future__ import annotations

import pytest

from legionrm.errors import SelectSyntaxError
from legionrm.models import ObjectRequest
from legionrm.scheduler.placement.select import (
    Chunk,
    Place,
    SelectRequest,
    Size,
    classify,
    exec_amount,
    format_size,
    parse_place,
    parse_request,
    parse_select,
    size_kb,
    value_position,
)

SELECTS = [
    ("2:ncpus=12", [(2, {"ncpus": 12})]),
    ("ncpus=4", [(1, {"ncpus": 4})]),
    ("2:ncpus=12:mem=16gb+1:ncpus=6:color=red", [(2, {"ncpus": 12, "mem": "16gb"}), (1, {"ncpus": 6, "color": "red"})]),
    ("1:bigmem=True:ssd=false", [(1, {"bigmem": True, "ssd": False})]),
    ("1:bigmem=TRUE", [(1, {"bigmem": True})]),
    ("1:factor=1.5", [(1, {"factor": 1.5})]),
    ('1:color="12"', [(1, {"color": "12"})]),
    ("1:name='a b'", [(1, {"name": "a b"})]),
    ("select=3:ncpus=1", [(3, {"ncpus": 1})]),
    ("1:host=node-1.example", [(1, {"host": "node-1.example"})]),
    ("1:arch=linux_x86_64", [(1, {"arch": "linux_x86_64"})]),
]


@pytest.mark.parametrize("text,want", SELECTS, ids=[s[0] for s in SELECTS])
def test_select_parses(text: str, want: list) -> None:
    got = parse_select(text)
    assert [(c.count, c.resources) for c in got] == want


UNITS = [
    ("1kb", 1), ("1KB", 1), ("2mb", 2048), ("16gb", 16 * 1024 * 1024), ("1tb", 1024**3),
    ("1pb", 1024**4), ("1b", 1), ("2048b", 2), ("1025b", 2), ("1.5gb", 1572864), ("0kb", 0),
]


@pytest.mark.parametrize("text,kb", UNITS, ids=[u[0] for u in UNITS])
def test_size_units_in_kb_rounding_up(text: str, kb: int) -> None:
    assert size_kb(text) == kb
    assert isinstance(classify(text), Size)


@pytest.mark.parametrize("text", ["red", "12", "gb", "1.2.3gb", "12 gb"], ids=str)
def test_not_sizes(text: str) -> None:
    assert size_kb(text) is None


def test_value_formatting() -> None:
    assert format_size(16 * 1024 * 1024) == "16gb"
    assert format_size(1536) == "1536kb"
    assert exec_amount(Size(1048576)) == "1048576kb"
    assert exec_amount(12.0) == "12"
    assert exec_amount(1.5) == "1.5"


PLACES = [
    ("free", Place()),
    ("scatter", Place(arrangement="scatter")),
    ("vscatter:excl", Place(arrangement="vscatter", sharing="excl")),
    ("excl", Place(sharing="excl")),
    ("pack:shared", Place(arrangement="pack", sharing="shared")),
    ("exclhost:scatter", Place(arrangement="scatter", sharing="exclhost")),
    ("scatter:excl:group=switch", Place(arrangement="scatter", sharing="excl", group="switch")),
    ("group=rack:free", Place(group="rack")),
    ("place=free:excl", Place(sharing="excl")),
]


@pytest.mark.parametrize("text,want", PLACES, ids=[p[0] for p in PLACES])
def test_place_parses(text: str, want: Place) -> None:
    assert parse_place(text) == want


def test_excl_and_exclhost_are_exclusive() -> None:
    assert Place(sharing="excl").excl and Place(sharing="exclhost").excl
    assert not Place(sharing="shared").excl and not Place().excl


def test_request_with_l_flags() -> None:
    r = parse_request("-l select=2:ncpus=12:mem=16gb+1:ncpus=6:color=red -lplace=scatter:excl")
    assert r.total_chunks == 3
    assert r.place == Place(arrangement="scatter", sharing="excl")
    assert r.text() == "select=2:ncpus=12:mem=16gb+1:ncpus=6:color=red place=scatter:excl"


ERRORS = [
    ("2:ncpus=", 9, "end of select"),
    ("2:ncpus=1++1", 11, "unexpected '+'"),
    ("0:ncpus=1", 1, "at least 1"),
    ("ncpus=1:ncpus=2", 9, "given twice"),
    ("2:ncpus=1:", 11, "end of select"),
    ("2:=4", 3, "unexpected"),
    ("2:ncpus=1 x", 11, "unexpected"),
    ("   ", 1, "empty"),
]


@pytest.mark.parametrize("text,column,words", ERRORS, ids=[e[0].strip() or "blank" for e in ERRORS])
def test_select_errors_have_caret(text: str, column: int, words: str) -> None:
    with pytest.raises(SelectSyntaxError) as ei:
        parse_select(text)
    err = ei.value
    assert err.column == column and err.line == 1
    assert words in str(err)
    assert err.caret.endswith(" " * (column - 1) + "^")


PLACE_ERRORS = [
    ("scatter:pack", 9, "two arrangements"),
    ("scater", 1, "unknown place keyword"),
    ("excl:shared", 6, "two sharing modes"),
    ("group", 6, "group=RES"),
    ("free:", 6, "end of place"),
    ("excl=3", 6, "unexpected '3'"),
    ("excl=x", 6, "takes no value"),
]


@pytest.mark.parametrize("text,column,words", PLACE_ERRORS, ids=[e[0] for e in PLACE_ERRORS])
def test_place_errors_have_caret(text: str, column: int, words: str) -> None:
    with pytest.raises(SelectSyntaxError) as ei:
        parse_place(text)
    assert ei.value.column == column
    assert words in str(ei.value)
    assert "^" in str(ei.value)


def test_models_build_the_same_request() -> None:
    parsed = SelectRequest.parse("2:ncpus=12:mem=16gb+1:ncpus=6:color=red", "scatter:excl")
    built = SelectRequest(
        chunks=(Chunk(count=2, resources={"ncpus": 12, "mem": "16gb"}), Chunk(count=1, resources={"ncpus": 6, "color": "red"})),
        place=Place(arrangement="scatter", sharing="excl"),
    )
    assert parsed == built
    assert parse_select(built.select_text()) == built.chunks


def test_model_validation() -> None:
    with pytest.raises(ValueError):
        Chunk(count=0)
    with pytest.raises(ValueError):
        SelectRequest(chunks=())
    with pytest.raises(ValueError):
        Place(arrangement="spread")  # type: ignore[arg-type]


def test_from_object_request() -> None:
    obj = ObjectRequest(class_name="c", count=3, cpus=2, memory_gb=1.5, gpus=1, placement="scatter", exclusive=True)
    r = SelectRequest.from_object(obj)
    assert r.chunks[0].count == 3
    assert r.chunks[0].resources == {"ncpus": 2, "mem": "1572864kb", "ngpus": 1}
    assert r.place == Place(arrangement="scatter", sharing="excl")


def test_chunk_text_round_trips_strings_that_look_like_numbers() -> None:
    c = Chunk(count=1, resources={"color": "12", "flag": True, "mem": "1gb"})
    assert parse_select(c.text())[0] == c


POSITIONS = [
    ("second chunk's value", "2:ncpus=1+1:ncpus=abc", 1, "ncpus", (1, 19)),
    ("with select= prefix", "select=2:gpu=x", 0, "gpu", (1, 14)),
    ("a resource not written (default ncpus)", "2:mem=1gb", 0, "ncpus", (1, 1)),
]


@pytest.mark.parametrize("why,text,chunk,res,pos", POSITIONS, ids=[p[0] for p in POSITIONS])
def test_value_position_points_at_the_value(why: str, text: str, chunk: int, res: str, pos: tuple[int, int]) -> None:
    assert value_position(text, chunk, res) == pos

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.slurm.hostlist import expand_hostlist


@pytest.mark.parametrize(
    ("text", "nodes"),
    [
        ("c1", ("c1",)),
        ("c[1-3,7]", ("c1", "c2", "c3", "c7")),
        ("c[1-2],f1", ("c1", "c2", "f1")),
        ("n[08-10]", ("n08", "n09", "n10")),
        ("rack[1-2]-n[1-2]", ("rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2")),
        ("None assigned", ()),
        ("", ()),
        ("c[1-2],c2", ("c1", "c2")),
    ],
)
def test_expand(text: str, nodes: tuple[str, ...]) -> None:
    assert expand_hostlist(text) == nodes


@pytest.mark.parametrize("text", ["c[1-", "c]1[", "c[3-1]", "c[a-b]", "c[1-2", "c,,d", "c[[1]]"])
def test_malformed_lists_are_input_errors(text: str) -> None:
    with pytest.raises(InputError):
        expand_hostlist(text)


def test_absurd_range_is_refused_not_expanded() -> None:
    with pytest.raises(InputError, match="too large"):
        expand_hostlist("c[1-999999999]")


@given(st.lists(st.integers(min_value=0, max_value=500), min_size=1, max_size=20, unique=True))
def test_ranges_cover_exactly_the_numbers(numbers: list[int]) -> None:
    body = ",".join(str(n) for n in numbers)
    assert expand_hostlist(f"n[{body}]") == tuple(f"n{n}" for n in numbers)


@given(st.text(alphabet="c[]0123456789-,", max_size=30))
def test_any_list_expands_or_raises_input_error(text: str) -> None:
    try:
        nodes = expand_hostlist(text)
    except InputError:
        return
    assert all(isinstance(node, str) and node for node in nodes)

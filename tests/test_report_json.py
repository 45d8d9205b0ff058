"""The report's JSON is json.dumps(indent=1) to the byte, written by the C encoder (render.report.indented)."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from corpus import GOLDEN

from warehouse.render.report import indented

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(alphabet=st.characters(codec="utf-8"), max_size=8) | st.sampled_from(
                        ["[x glue]", "{", "}", "a,\n b", "},\n  {", "\\", '"']))
_KEY = st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
_ROW = st.dictionaries(st.text(max_size=5), _SCALAR, max_size=5)
_DOC = st.recursive(_SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(_KEY, inner, max_size=5), st.lists(_ROW, max_size=6)),
    max_leaves=40)


@settings(max_examples=600, deadline=None, derandomize=True)
@given(_DOC)
def test_indented_is_the_stdlibs_indent_1(doc):
    assert indented(doc) == json.dumps(doc, indent=1)


def test_every_golden_report_comes_back_to_the_byte():
    files = sorted(GOLDEN.glob("**/*.json"))
    assert len(files) > 5
    for f in files:  # (the oracle's reports, written with indent=1)
        text = f.read_text()
        assert indented(json.loads(text)) + "\n" == text, f

"""The gate and `changes` as JUnit XML, the report every CI system reads (GitHub, GitLab, Jenkins, Buildkite).

One ``<testsuite>`` per judged run (the gate) or per history (`changes`); in it one ``<testcase>`` per cause
(a key group: the block, op code, layer... with the sections, metrics and devices it moved on) and one coverage case:

- a regression (the gate) or a change for the worse (`changes`) is a ``<failure>``;
- an improvement or a suspicious move passes, with its line in ``<system-out>``;
- the coverage case passes with the series judged, or is ``<skipped>`` as *insufficient data* when no series had
  history enough to judge (lost coverage must not read as a pass);
- an invalid capture is an ``<error>``.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from warehouse.render.causes import line as cause_line, rank_of


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", {"classname": classname, "name": name, "time": "0"})


def _suite(root: ET.Element, name: str, timestamp: str | None) -> ET.Element:
    attrs = {"name": name, "tests": "0", "failures": "0", "errors": "0", "skipped": "0", "time": "0"}
    if timestamp:
        attrs["timestamp"] = timestamp.replace(" ", "T")
    return ET.SubElement(root, "testsuite", attrs)


def _count(root: ET.Element) -> str:
    """Fill in every suite's and the root's counts from their cases, and serialise."""
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        n = {"tests": len(cases), "failures": sum(c.find("failure") is not None for c in cases),
             "errors": sum(c.find("error") is not None for c in cases),
             "skipped": sum(c.find("skipped") is not None for c in cases)}
        for k, v in n.items():
            suite.set(k, str(v))
            totals[k] += v
    for k in ("tests", "failures", "errors"):
        root.set(k, str(totals[k]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _name(c: Any) -> str:
    return rank_of(c) + f"{c.by} {c.key}"


def gate(res: Any) -> str:
    """A gate result (:class:`warehouse.history.gate.Gate`) as JUnit XML."""
    root = ET.Element("testsuites", {"name": "warehouse regressions"})
    for bad in res.invalid:
        suite = _suite(root, f"run {bad.get('run_id')} ({bad.get('label')})", bad.get("time"))
        err = ET.SubElement(_case(suite, "capture", "valid capture"), "error",
                            {"type": "invalid capture", "message": "; ".join(bad.get("problems", []))})
        err.text = "; ".join(bad.get("problems", []))
    for checked in res.checked:
        run_id = checked.get("run_id")
        suite = _suite(root, checked.get("short") or f"run {run_id}", checked.get("time"))
        cov = _case(suite, "coverage", "series judged")
        judged, little = checked.get("series_judged", 0), checked.get("too_little_history", 0)
        summary = (f"{judged} series judged, {little} with too little history, {checked.get('new_keys', 0)} key(s) "
                   f"new and {checked.get('gone_keys', 0)} gone against the baseline")
        if not judged:
            ET.SubElement(cov, "skipped", {"message": f"insufficient data: {summary}"})
        else:
            ET.SubElement(cov, "system-out").text = summary
        rank = (checked.get("tags") or {}).get("rank")  # (a capture as a whole is its first rank's run too)
        for c in (c for c in res.findings if c.run_id == run_id and (c.tags or {}).get("rank") == rank):
            case = _case(suite, f"{c.kind}", f"{_name(c)} [{c.id}]")
            text = cause_line(c)
            if c.kind == "regression":
                f = ET.SubElement(case, "failure", {"type": "regression", "message": text})
                f.text = text
            else:
                ET.SubElement(case, "system-out").text = text
    return _count(root)


def changes(res: Any) -> str:
    """A `changes` result (:class:`warehouse.history.changes.ChangesResult`) as JUnit XML: a change for the worse
    is a failure."""
    root = ET.Element("testsuites", {"name": "warehouse changes"})
    suite = _suite(root, f"changes of {res.label or 'every run'}", res.runs[-1].get("time") if res.runs else None)
    cov = _case(suite, "coverage", "series judged")
    cv = getattr(res, "coverage", None) or {}
    summary = (f"{res.series} series over {len(res.runs)} runs; {cv.get('too_little_history', 0)} with too little "
               f"history, {cv.get('new_keys', 0)} key(s) new and {cv.get('gone_keys', 0)} gone")
    if not res.series or len(res.runs) < 2:
        ET.SubElement(cov, "skipped", {"message": f"insufficient data: {summary}"})
    else:
        ET.SubElement(cov, "system-out").text = summary
    for bad in res.invalid:
        err = ET.SubElement(_case(suite, "capture", f"valid capture: run {bad.get('run_id')}"), "error",
                            {"type": "invalid capture", "message": "; ".join(bad.get("problems", []))})
        err.text = "; ".join(bad.get("problems", []))
    for c in res.changes:
        case = _case(suite, c.kind, f"{_name(c)} [{c.id}]")
        pct = f"{c.change_pct:+.1f} %" if c.change_pct is not None else ""
        text = (f"{c.kind} of {_name(c)}: {pct} ({c.before} -> {c.after} {c.unit}) from {c.time}; "
                f"{', '.join(c.sections)}; {'+'.join(c.metrics)}")
        if c.worse and not c.triage:
            f = ET.SubElement(case, "failure", {"type": f"{c.kind} for the worse", "message": text})
            f.text = text
        else:
            ET.SubElement(case, "system-out").text = text + (f" (triaged: {c.triage})" if c.triage else "")
    return _count(root)


def farm(res: Any) -> str:
    """Changes across labels (:class:`warehouse.history.farm.Farm`) as JUnit XML: a suite per group, a failure
    per change for the worse."""
    root = ET.Element("testsuites", {"name": "warehouse changes"})
    for n, g in enumerate(res.groups, 1):
        suite = _suite(root, f"group {n}: {', '.join(g.labels)} from {g.first_night}", None)
        for fc in g.changes:
            c = fc.change
            case = _case(suite, fc.label, f"{_name(c)} [{c.id}]")
            text = f"{fc.label}: {c.kind} of {_name(c)}: {c.change_pct:+.1f} % from {c.time}"
            if c.worse and not c.triage:
                f = ET.SubElement(case, "failure", {"type": f"{c.kind} for the worse", "message": text})
                f.text = text
            else:
                ET.SubElement(case, "system-out").text = text
    return _count(root)

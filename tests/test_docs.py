"""The documentation as a user meets it: the README short and its tour run as written (every shown line of output
appears), the CI guide's workflow steps run in order against a scratch warehouse, no development log in the
product's text, and the generated references current."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TIMING = re.compile(r"\d+\.\d+ s$")  # (a line that ends in a duration differs from run to run)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "WAREHOUSE_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


def _console(text: str) -> list[tuple[str, list[str]]]:
    """The ``$ command`` lines of the console blocks and the output lines shown under each."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif out:
                out[-1][1].append(line)
    return out


def test_readme_is_short_and_has_the_two_setup_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    bash = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert len(bash) == 2 and "pip install" in bash[0] and "pytest" in bash[1]


def test_the_readme_tour_runs_as_written(tmp_path):
    """Each command of the tour, in order, in a scratch folder (paths into the repository made absolute): its shown
    output lines appear in what it prints (lines with a timing aside), and `echo $?` shows the gate's status."""
    last_status = 0
    for cmd, shown in _console((ROOT / "README.md").read_text()):
        cmd = re.sub(r"(?<![\w/])tests/", f"{ROOT}/tests/", cmd)
        if cmd.startswith("warehouse serve"):
            continue  # (a server: tests/test_web_server.py serves one)
        if cmd.startswith("python "):
            cmd = f"{sys.executable} {cmd[len('python '):]}"
        if cmd == "echo $?":
            assert shown == [str(last_status)]
            continue
        r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                           timeout=300)
        last_status = r.returncode
        assert r.returncode in (0, 3), (cmd, r.stdout[-2000:], r.stderr[-2000:])
        for line in shown:
            if TIMING.search(line):
                line = TIMING.sub("", line)
            assert line in r.stdout, (cmd, line, r.stdout[-3000:])
    assert (tmp_path / "report.md").exists() and (tmp_path / "block.png").exists()


def _workflow_steps() -> tuple[list[dict], dict[str, str]]:
    text = (ROOT / "docs" / "ci.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
    doc = yaml.safe_load(block)
    return doc["jobs"]["gate"]["steps"], doc["jobs"]["gate"]["env"]


def _run_steps(tmp_path: Path, captures: Path, extra: dict[str, str]) -> list[subprocess.CompletedProcess]:
    steps, env = _workflow_steps()
    out = []
    for step in steps:
        run = step.get("run")
        if run is None or run.startswith(("pip install", "python -m tracy")):
            continue  # (actions, the install and the profiling step: the capture is given)
        r = subprocess.run(["bash", "-e", "-c", run], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                           env=_env(**{**env, "CAPTURES": str(captures), **extra}))
        out.append(r)
        if r.returncode:
            break
    return out


def test_the_ci_guide_workflow_runs_as_written(tmp_path):
    oft = ROOT / "tests/data/seedfmt/oft_mismatch/ops_perf_results_2026_11_02_02_00_00.csv"
    mk = ROOT / "tests" / "mkseries.py"
    subprocess.run([sys.executable, str(mk), str(oft), str(tmp_path / "main"), "--runs", "8", "--seed", "41"],
                   check=True, capture_output=True)
    subprocess.run([sys.executable, str(mk), str(oft), str(tmp_path / "pr"), "--runs", "2", "--seed", "42",
                    "--slow-block", "stage2.block1"], check=True, capture_output=True)
    summary = tmp_path / "summary.md"
    # the nightly: main's eight nights, gated against their own history (quiet)
    rs = _run_steps(tmp_path, tmp_path / "main", {"GITHUB_SHA": "aaa111", "GITHUB_STEP_SUMMARY": str(summary)})
    assert [r.returncode for r in rs] == [0, 0], [(r.stdout[-500:], r.stderr[-500:]) for r in rs]
    # the PR: its capture with one block 30 % slower, against main's nights
    slow = tmp_path / "pr_slow"
    slow.mkdir()
    # (captured after main's nights, as a PR's capture is)
    shutil.copy(sorted((tmp_path / "pr").glob("*.csv"))[-1], slow / "ops_perf_results_2026_11_20_02_00_00.csv")
    rs = _run_steps(tmp_path, slow, {"GITHUB_SHA": "bbb222", "GITHUB_HEAD_REF": "pr-17",
                                     "GITHUB_STEP_SUMMARY": str(summary)})
    assert [r.returncode for r in rs] == [0, 3], [(r.stdout[-500:], r.stderr[-500:]) for r in rs]
    gate_md = (tmp_path / "perf" / "gate.md").read_text()
    assert "stage2.block1" in gate_md and "regression" in gate_md
    junit = (tmp_path / "perf" / "gate.xml").read_text()
    assert junit.count("<failure") == 1 and "stage2.block1" in junit
    assert "stage2.block1" in summary.read_text()


FORBIDDEN = re.compile(r"\bstop [0-9]|this stop|the stop's|\bissue [0-9]|this round", re.I)


@pytest.mark.parametrize("where", ["README.md", "CHANGELOG.md", "docs", "warehouse"])
def test_no_development_log_in_the_product(where):
    root = ROOT / where
    files = [root] if root.is_file() else [p for p in root.rglob("*") if p.suffix in (".md", ".py", ".html")]
    bad = [f"{p.relative_to(ROOT)}:{n}: {line.strip()[:80]}" for p in files
           for n, line in enumerate(p.read_text().splitlines(), 1) if FORBIDDEN.search(line)]
    assert not bad, bad


def test_generated_references_are_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_the_agent_session_replays_as_shown(tmp_path):
    """The transcript of docs/agents.md, replayed on the same warehouse through the SDK's client: each answer
    begins as shown."""
    pytest.importorskip("mcp")
    import json

    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    text = (ROOT / "docs" / "agents.md").read_text()
    (block,) = re.findall(r"```text\n(.*?)```", text, re.S)
    calls = re.findall(r"^→ (\w+) (.*)\n← (.*)$", block, re.M)
    assert len(calls) >= 3
    oft = ROOT / "tests/data/seedfmt/oft_mismatch/ops_perf_results_2026_11_02_02_00_00.csv"
    subprocess.run([sys.executable, str(ROOT / "tests" / "mkseries.py"), str(oft), str(tmp_path / "nightly"), "--runs",
                    "9", "--seed", "21", "--slow-block", "stage2.block1"], check=True, capture_output=True)
    db = tmp_path / "warehouse.db"
    r = subprocess.run([str(BIN / "warehouse"), "--db", str(db), "ingest", str(tmp_path / "nightly"), "--label", "oft"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr

    async def replay() -> list[str]:
        params = StdioServerParameters(command=str(BIN / "warehouse"), args=["--db", str(db), "mcp"], env=_env())
        out = []
        async with Client(params) as c:
            for name, args, _ in calls:
                res = await c.call_tool(name, json.loads(args))
                out.append(getattr(res.content[0], "text", ""))
        return out
    for (name, _, shown), got in zip(calls, anyio.run(replay)):
        assert got.startswith(shown.removesuffix("…")), (name, shown[:200], got[:400])

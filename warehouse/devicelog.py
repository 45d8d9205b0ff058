"""Chip frequency and architecture from the ``profile_log_device.csv`` that tt-metal writes beside a run."""
from __future__ import annotations

import re
from pathlib import Path

DEFAULT_FREQ_MHZ = 1350.0
_FREQ = re.compile(r"CHIP_FREQ\[MHz\]:\s*([0-9.]+)")
_ARCH = re.compile(r"ARCH:\s*([A-Za-z0-9_]+)")


def candidates(csv_path: Path) -> list[Path]:
    """The four places the oracle looks for the device log, in its order."""
    d = csv_path.parent
    return [d / "profile_log_device.csv", d.parent / "profile_log_device.csv",
            d / ".logs" / "profile_log_device.csv", d.parent / ".logs" / "profile_log_device.csv"]


def _first_line(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.readline(4096).decode("utf-8", "ignore")
    except OSError:
        return None


def device_log_info(csv_path: Path) -> tuple[float | None, str | None, str | None]:
    """``(freq_mhz, arch, log path)`` from the first device log with a frequency, else ``(None, arch?, None)``."""
    arch = None
    for cand in candidates(csv_path):
        head = _first_line(cand)
        if head is None:
            continue
        m = _ARCH.search(head)
        if m and arch is None:
            arch = m.group(1)
        f = _FREQ.search(head)
        if f:
            try:
                return float(f.group(1)), (m.group(1) if m else arch), str(cand)
            except ValueError:
                continue
    return None, arch, None


def resolve_freq(csv_path: Path, option: float | None) -> tuple[float, str, str | None]:
    """``(freq_mhz, source, arch)``: ``--freq-mhz``, else the device log, else 1350 MHz (the oracle's order)."""
    log_freq, arch, log_path = device_log_info(csv_path)
    if option:
        return float(option), "option", arch
    if log_freq:
        return log_freq, log_path or "device log", arch
    return DEFAULT_FREQ_MHZ, "default", arch

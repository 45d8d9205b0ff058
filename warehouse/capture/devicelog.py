"""Chip frequency and architecture from the ``profile_log_device.csv`` that tt-metal writes beside a run."""
from __future__ import annotations

import math
import re
from pathlib import Path

from warehouse.errors import InputError, UsageError
from warehouse.capture.files import is_regular, shown

DEFAULT_FREQ_MHZ = 1350.0
# A Tensix chip runs at hundreds of MHz to a few GHz; anything outside this is a typo or a damaged log.
FREQ_RANGE_MHZ = (1.0, 100_000.0)
_FREQ = re.compile(r"CHIP_FREQ\[MHz\]:\s*([0-9.]+)")
_ARCH = re.compile(r"ARCH:\s*([A-Za-z0-9_]+)")


def candidates(csv_path: Path) -> list[Path]:
    """The four places the oracle looks for the device log, in its order."""
    d = csv_path.parent
    return [d / "profile_log_device.csv", d.parent / "profile_log_device.csv",
            d / ".logs" / "profile_log_device.csv", d.parent / ".logs" / "profile_log_device.csv"]


def _first_line(path: Path) -> str | None:
    if not is_regular(path):  # a FIFO named profile_log_device.csv must not hang ingest
        return None
    try:
        with open(path, "rb") as f:
            return f.readline(4096).decode("utf-8", "ignore")
    except OSError:
        return None


def device_log_arch(csv_path: Path) -> str | None:
    """The architecture named by the first device log that names one (its frequency is not needed)."""
    for cand in candidates(csv_path):
        head = _first_line(cand)
        m = _ARCH.search(head) if head else None
        if m:
            return m.group(1)
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
                freq = float(f.group(1))
            except ValueError:
                continue
            if not plausible(freq):
                raise InputError(shown(cand), f"CHIP_FREQ[MHz] {f.group(1)[:20]!r} is not a plausible chip "
                                              f"frequency; fix the log or pass --freq-mhz", row=1,
                                 column="CHIP_FREQ[MHz]")
            return freq, (m.group(1) if m else arch), shown(cand)
    return None, arch, None


def plausible(freq: float) -> bool:
    """A finite frequency within :data:`FREQ_RANGE_MHZ`."""
    return math.isfinite(freq) and FREQ_RANGE_MHZ[0] <= freq <= FREQ_RANGE_MHZ[1]


def check_freq_option(freq: float | None) -> None:
    """Refuse a ``--freq-mhz`` that is not a plausible frequency (NaN, infinities, 1e400, 0, negatives)."""
    if freq is not None and not plausible(freq):
        raise UsageError(f"{freq!r}: expected a chip frequency in MHz between "
                         f"{FREQ_RANGE_MHZ[0]:g} and {FREQ_RANGE_MHZ[1]:g}", param="freq_mhz")


def resolve_freq(csv_path: Path, option: float | None) -> tuple[float, str, str | None]:
    """``(freq_mhz, source, arch)``: ``--freq-mhz``, else the device log, else 1350 MHz (the oracle's order)."""
    check_freq_option(option)
    if option:
        return float(option), "option", device_log_arch(csv_path)
    log_freq, arch, log_path = device_log_info(csv_path)
    if log_freq:
        return log_freq, log_path or "device log", arch
    return DEFAULT_FREQ_MHZ, "default", arch

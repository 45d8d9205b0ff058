"""The numeric column families of every tt-metal era, each known CSV column given a typed home: a named column
of one family view (``op_util.fpu_util_pct``, ``op_kernel.trisc1_ns`` ...), read from the lossless store.

Tracy's CSV carries far more than the four durations history watches: the perf model, utilisation, per-RISC and
per-core kernel times, dispatch and host times, kernel binary sizes, and in newer tt-metal the program hash,
cache hit and sub-device. Their cells stay where ingest keeps every cell (the static tuples and the compressed
volatile chunks, :mod:`warehouse.store.cells`), so a home costs no byte and no ingest time; a family view reads
them by name per run (the header's last column of that name, as ingest reads a typed column), as numbers when
the whole cell is one (the same rule as ``csv_cell.number``), else NULL.

A column known under several names across eras lists them all (the first present in a run is read). Numeric
columns with a home elsewhere, and those that cannot have a fixed one, are listed in :data:`ELSEWHERE` with
the reason; a test holds every numeric column of every corpus capture to one or the other.
"""
from __future__ import annotations

from dataclasses import dataclass
from warehouse.registry.columns import OP_COLUMNS


NUMBER, TEXT, FLAG = "number", "text", "flag"  # how a family column reads its cell
SQL_TYPE = {NUMBER: "DOUBLE", TEXT: "TEXT", FLAG: "INTEGER"}


@dataclass(frozen=True)
class FamilyColumn:
    """One column of a family view: its name there, the CSV header(s) it reads, how, its unit and meaning."""

    name: str
    csv: tuple[str, ...]
    unit: str
    doc: str
    kind: str = NUMBER


@dataclass(frozen=True)
class Family:
    """A family view: ``view`` has ``run_id``, ``row_no``, ``device``, ``op_code`` and one column per entry."""

    view: str
    doc: str
    columns: tuple[FamilyColumn, ...]


def _c(name: str, csv: str | tuple[str, ...], unit: str, doc: str, kind: str = NUMBER) -> FamilyColumn:
    return FamilyColumn(name, (csv,) if isinstance(csv, str) else csv, unit, doc, kind)


def _util(stem: str, what: str) -> tuple[FamilyColumn, ...]:
    # the per-core utilisation summaries of newer profilers: min, median, max over cores and the full-grid mean
    caps = {"sfpu": "SFPU", "fpu": "FPU", "math": "MATH"}[stem]
    grid = {"sfpu": "Avg SFPU util on full grid (%)", "fpu": "Avg FPU util on full grid (%)",
            "math": "Avg Math util on full grid (%)"}[stem]
    return (_c(f"{stem}_util_min_pct", f"{caps} Util Min (%)", "%", f"{what} utilisation, the least busy core"),
            _c(f"{stem}_util_median_pct", f"{caps} Util Median (%)", "%", f"{what} utilisation, median core"),
            _c(f"{stem}_util_max_pct", f"{caps} Util Max (%)", "%", f"{what} utilisation, the busiest core"),
            _c(f"{stem}_util_grid_pct", grid, "%", f"{what} utilisation averaged over the whole grid"))


FAMILIES: tuple[Family, ...] = (
    Family("op_util", "every op's utilisation figures (%): the perf model's FPU, NoC, DRAM and Ethernet bandwidth, "
                      "congestion, and per-core SFPU / FPU / math utilisation", (
        _c("fpu_util_pct", "PM FPU UTIL (%)", "%", "FPU utilisation by the perf model (ideal over measured)"),
        _c("noc_util_pct", "NOC UTIL (%)", "%", "NoC utilisation"),
        _c("multicast_noc_util_pct", "MULTICAST NOC UTIL (%)", "%", "multicast NoC utilisation"),
        _c("dram_bw_util_pct", "DRAM BW UTIL (%)", "%", "DRAM bandwidth utilisation"),
        _c("eth_bw_util_pct", "ETH BW UTIL (%)", "%", "Ethernet bandwidth utilisation"),
        _c("npe_cong_impact_pct", "NPE CONG IMPACT (%)", "%", "the NoC performance estimator's congestion impact"),
        *_util("sfpu", "SFPU"), *_util("fpu", "FPU"), *_util("math", "math"),
    )),
    Family("op_model", "every op's perf-model estimates: ideal, compute- and bandwidth-bound times (ns) and the "
                       "requested input / output bandwidths (a list per tensor, as text)", (
        _c("pm_ideal_ns", "PM IDEAL [ns]", "ns", "the perf model's ideal time: the larger of compute and bandwidth"),
        _c("pm_compute_ns", "PM COMPUTE [ns]", "ns", "the perf model's compute-bound time"),
        _c("pm_bandwidth_ns", "PM BANDWIDTH [ns]", "ns", "the perf model's bandwidth-bound time"),
        _c("pm_req_i_bw", "PM REQ I BW", "", "requested input bandwidth per input tensor (a list: text)", TEXT),
        _c("pm_req_o_bw", "PM REQ O BW", "", "requested output bandwidth per output tensor (a list: text)", TEXT),
    )),
    Family("op_kernel", "every op's kernel times beyond the kernel duration (ns): per RISC, per core (min, max, "
                        "mean), first to last start, circular-buffer waits, data-movement start", (
        _c("brisc_ns", "DEVICE BRISC KERNEL DURATION [ns]", "ns", "the BRISC (data movement 0) kernel"),
        _c("ncrisc_ns", "DEVICE NCRISC KERNEL DURATION [ns]", "ns", "the NCRISC (data movement 1) kernel"),
        _c("trisc0_ns", "DEVICE TRISC0 KERNEL DURATION [ns]", "ns", "the TRISC0 (unpack) kernel"),
        _c("trisc1_ns", "DEVICE TRISC1 KERNEL DURATION [ns]", "ns", "the TRISC1 (math) kernel"),
        _c("trisc2_ns", "DEVICE TRISC2 KERNEL DURATION [ns]", "ns", "the TRISC2 (pack) kernel"),
        _c("erisc_ns", "DEVICE ERISC KERNEL DURATION [ns]", "ns", "the Ethernet RISC kernel"),
        _c("kernel_dm_start_ns", "DEVICE KERNEL DURATION DM START [ns]", "ns",
           "kernel time counted from the first data-movement start"),
        _c("per_core_min_ns", "DEVICE KERNEL DURATION PER CORE MIN [ns]", "ns", "kernel time of the fastest core"),
        _c("per_core_max_ns", "DEVICE KERNEL DURATION PER CORE MAX [ns]", "ns", "kernel time of the slowest core"),
        _c("per_core_avg_ns", "DEVICE KERNEL DURATION PER CORE AVG [ns]", "ns", "kernel time, mean over cores"),
        _c("first_to_last_start_ns", "DEVICE KERNEL FIRST TO LAST START [ns]", "ns",
           "the spread of the cores' kernel starts"),
        _c("cb_wait_front_ns", "DEVICE COMPUTE CB WAIT FRONT [ns]", "ns", "compute waiting on input buffers"),
        _c("cb_reserve_back_ns", "DEVICE COMPUTE CB RESERVE BACK [ns]", "ns", "compute waiting on output buffers"),
        _c("op2op_brnrisc_ns", "OP TO OP LATENCY BR/NRISC START [ns]", "ns",
           "the gap since the previous op, to the first BRISC / NCRISC start"),
        _c("trace_kernel_ns", "DEVICE TRACE KERNEL DURATION [ns]", "ns",
           "a traced op's kernel time as tt-metal's post-processor measures it in the trace"),
        _c("trace_fw_ns", "DEVICE TRACE FIRMWARE DURATION [ns]", "ns",
           "a traced op's firmware time as tt-metal's post-processor measures it in the trace"),
    )),
    Family("op_dispatch", "every op's host and dispatch times (ns): host duration, command-queue and go-signal "
                          "waits", (
        _c("host_duration_ns", "HOST DURATION [ns]", "ns", "host time of the op (HOST END TS - HOST START TS)"),
        _c("dispatch_cq_cmd_ns", "DISPATCH TOTAL CQ CMD OP TIME [ns]", "ns", "the command queue's time for the op"),
        _c("dispatch_go_wait_ns", "DISPATCH GO SEND WAIT TIME [ns]", "ns", "the wait before the go signal"),
    )),
    Family("op_binary", "every op's kernel binary sizes (bytes) per processor, in both eras' names", (
        _c("tensix_dm0_bytes", ("TENSIX DM 0 MAX KERNEL SIZE [B]", "BRISC MAX KERNEL SIZE [B]"), "B",
           "data movement 0 (BRISC) kernel binary; older tt-metal: BRISC MAX KERNEL SIZE"),
        _c("tensix_dm1_bytes", ("TENSIX DM 1 MAX KERNEL SIZE [B]", "NCRISC MAX KERNEL SIZE [B]"), "B",
           "data movement 1 (NCRISC) kernel binary; older: NCRISC MAX KERNEL SIZE"),
        _c("tensix_compute0_bytes", ("TENSIX COMPUTE 0 MAX KERNEL SIZE [B]", "TRISC 0 MAX KERNEL SIZE [B]"), "B",
           "unpack (TRISC 0) kernel binary; older: TRISC 0 MAX KERNEL SIZE"),
        _c("tensix_compute1_bytes", ("TENSIX COMPUTE 1 MAX KERNEL SIZE [B]", "TRISC 1 MAX KERNEL SIZE [B]"), "B",
           "math (TRISC 1) kernel binary; older: TRISC 1 MAX KERNEL SIZE"),
        _c("tensix_compute2_bytes", ("TENSIX COMPUTE 2 MAX KERNEL SIZE [B]", "TRISC 2 MAX KERNEL SIZE [B]"), "B",
           "pack (TRISC 2) kernel binary; older: TRISC 2 MAX KERNEL SIZE"),
        _c("active_eth_dm0_bytes", ("ACTIVE ETH DM 0 MAX KERNEL SIZE [B]", "ERISC MAX KERNEL SIZE [B]"), "B",
           "active Ethernet data movement 0 kernel binary; older: ERISC MAX KERNEL SIZE"),
        _c("active_eth_dm1_bytes", "ACTIVE ETH DM 1 MAX KERNEL SIZE [B]", "B",
           "active Ethernet data movement 1 kernel binary"),
        _c("idle_eth_dm0_bytes", "IDLE ETH DM 0 MAX KERNEL SIZE [B]", "B", "idle Ethernet data movement 0 binary"),
        _c("idle_eth_dm1_bytes", "IDLE ETH DM 1 MAX KERNEL SIZE [B]", "B", "idle Ethernet data movement 1 binary"),
    )),
    Family("op_program", "every op's program facts of newer tt-metal: program hash (text: it exceeds 64-bit "
                         "signed), program cache hit (1 / 0), sub-device, available worker cores", (
        _c("program_hash", "PROGRAM HASH", "", "the program's hash (an unsigned 64-bit number, as text)", TEXT),
        _c("program_cache_hit", "PROGRAM CACHE HIT", "", "1 when the program came from the cache, 0 when built",
           FLAG),
        _c("sub_device_id", "SUB DEVICE ID", "", "the sub-device the op ran on"),
        _c("available_cores", "AVAILABLE WORKER CORE COUNT", "", "worker cores the device offered"),
    )),
)

# Numeric CSV columns without a family column, and where they are instead: a test holds every numeric column of
# every corpus capture to a family, a typed op column (warehouse.registry.columns) or an entry here.
ELSEWHERE: dict[str, str] = {
    **{f"{io}_{n}_{d}{pad}": "op_tensor (w, z, y, x and their _pad): the tensors' logical and padded shapes"
       for io, ns in (("INPUT", range(5)), ("OUTPUT", range(2))) for n in ns for d in "WXYZ"
       for pad in ("", "_PAD[LOGICAL]")},
}
# Columns named after a host function (``<Name>_TT_HOST_FUNC [ns]``): the set differs between programs, so no
# fixed home fits them; csv_cell gives them by name (its ``number``).
HOST_FUNC_SUFFIX = "_TT_HOST_FUNC [ns]"


def home_of(csv_name: str) -> str | None:
    """Where a CSV column's cells are read as typed values (``view.column``, ``op.column``), or why they have
    no fixed home; None when the warehouse does not know the column."""

    for c in OP_COLUMNS:
        if c.csv == csv_name:
            return c.home
    for fam in FAMILIES:
        for col in fam.columns:
            if csv_name in col.csv:
                return f"{fam.view}.{col.name}"
    if csv_name in ELSEWHERE:
        return ELSEWHERE[csv_name]
    if csv_name.endswith(HOST_FUNC_SUFFIX):
        return "csv_cell (by name): host function timings, named per program"
    return None


def markdown_table() -> str:
    """The README's table of family columns: CSV header(s), home, type, unit, meaning."""
    rows = ["| CSV column | home | type | unit | meaning |", "|---|---|---|---|---|"]
    for fam in FAMILIES:
        for c in fam.columns:
            names = " / ".join(f"`{n}`" for n in c.csv)
            rows.append(f"| {names} | `{fam.view}.{c.name}` | {SQL_TYPE[c.kind]} | {c.unit} | {c.doc} |")
    return "\n".join(rows)

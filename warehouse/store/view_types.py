"""The declared SQL type of every view column, in one vocabulary on both back ends (INTEGER, REAL, TEXT, BOOLEAN,
TIMESTAMP, BLOB): SQLite declares no type for a computed column, so ``warehouse schema`` reads them here. Generated
by ``scripts/gen_view_types.py`` from PostgreSQL's inference; a test holds it equal to it and to SQLite's values."""
from __future__ import annotations

from typing import Any


def generic(sql_type: Any) -> str:
    """A back end's type name in the declared vocabulary (``DOUBLE PRECISION`` -> REAL, ``VARCHAR(16)`` -> TEXT)."""
    s = str(sql_type).upper()
    for prefix, name in (("INTEGER", "INTEGER"), ("BIGINT", "INTEGER"), ("SMALLINT", "INTEGER"),
                         ("DOUBLE", "REAL"), ("NUMERIC", "REAL"), ("REAL", "REAL"), ("FLOAT", "REAL"),
                         ("TEXT", "TEXT"), ("VARCHAR", "TEXT"), ("CHAR", "TEXT"), ("BOOLEAN", "BOOLEAN"),
                         ("TIMESTAMP", "TIMESTAMP"), ("DATETIME", "TIMESTAMP"), ("BYTEA", "BLOB"),
                         ("BLOB", "BLOB")):
        if s.startswith(prefix):
            return name
    return s


VIEW_TYPES: dict[str, dict[str, str]] = {
    "capture_rank": {"run_id": "INTEGER", "capture_id": "INTEGER", "rank": "INTEGER"},
    "rollup": {"run_id": "INTEGER", "section": "TEXT", "grouping": "TEXT", "key": "TEXT", "device": "INTEGER",
        "iterations": "INTEGER", "ops": "REAL", "kernel_us": "REAL", "kernel_spread_us": "REAL", "op2op_us": "REAL",
        "op2op_spread_us": "REAL", "fw_us": "REAL", "fw_spread_us": "REAL", "span_us": "REAL", "span_spread_us":
        "REAL", "rank": "INTEGER"},
    "op_detail": {"op_id": "INTEGER", "run_id": "INTEGER", "row_no": "INTEGER", "section": "TEXT", "section_kind":
        "TEXT", "pos": "INTEGER", "block": "TEXT", "layer": "TEXT", "attribution": "TEXT", "occurrence": "INTEGER",
        "marker_row": "INTEGER", "op_code_id": "INTEGER", "op_code": "TEXT", "category": "TEXT", "is_compute":
        "INTEGER", "op_type": "TEXT", "device_id": "INTEGER", "global_call_count": "INTEGER", "kernel_us": "REAL",
        "fw_us": "REAL", "op2op_us": "REAL", "fw_start_cycle": "REAL", "fw_end_cycle": "REAL", "host_start_ns":
        "INTEGER", "host_end_ns": "INTEGER", "cores": "INTEGER", "fidelity": "TEXT", "trace_id": "TEXT",
        "replay_session": "TEXT", "input0_shape": "TEXT", "input0_memory": "TEXT", "output0_memory": "TEXT", "rank":
        "INTEGER"},
    "section_totals_raw": {"run_id": "INTEGER", "section": "TEXT", "ops": "INTEGER", "kernel_sum_us": "REAL",
        "fw_sum_us": "REAL", "op2op_sum_us": "REAL", "first_start_cycle": "REAL", "last_end_cycle": "REAL",
        "ops_below_120_cores": "INTEGER"},
    "section_gap_median": {"run_id": "INTEGER", "section": "TEXT", "op2op_median_us": "REAL"},
    "section_cores_median": {"run_id": "INTEGER", "section": "TEXT", "cores_median": "REAL"},
    "section_summary": {"run_id": "INTEGER", "section": "TEXT", "ops": "INTEGER", "kernel_sum_us": "REAL",
        "fw_sum_us": "REAL", "op2op_sum_us": "REAL", "op2op_median_us": "REAL", "span_us": "REAL", "freq_mhz":
        "REAL", "cores_median": "REAL", "ops_below_120_cores": "INTEGER"},
    "section_fidelity": {"run_id": "INTEGER", "section": "TEXT", "fidelity": "TEXT", "ops": "INTEGER", "first_pos":
        "INTEGER"},
    "by_op_code": {"run_id": "INTEGER", "section": "TEXT", "key": "TEXT", "ops": "INTEGER", "kernel_us": "REAL",
        "share_pct": "REAL", "op2op_us": "REAL", "first_pos": "INTEGER"},
    "by_category": {"run_id": "INTEGER", "section": "TEXT", "key": "TEXT", "ops": "INTEGER", "kernel_us": "REAL",
        "share_pct": "REAL", "op2op_us": "REAL", "first_pos": "INTEGER"},
    "by_block": {"run_id": "INTEGER", "section": "TEXT", "key": "TEXT", "ops": "INTEGER", "kernel_us": "REAL",
        "share_pct": "REAL", "op2op_us": "REAL", "first_pos": "INTEGER"},
    "by_layer": {"run_id": "INTEGER", "section": "TEXT", "key": "TEXT", "ops": "INTEGER", "kernel_us": "REAL",
        "share_pct": "REAL", "op2op_us": "REAL", "first_pos": "INTEGER"},
    "layer_cost_split": {"run_id": "INTEGER", "section": "TEXT", "layer": "TEXT", "ops": "INTEGER", "compute_ops":
        "INTEGER", "compute_us": "REAL", "movement_us": "REAL", "split_us": "REAL", "finish_us": "REAL",
        "movement_ops": "INTEGER", "split_ops": "INTEGER", "finish_ops": "INTEGER", "first_pos": "INTEGER"},
    "op_custom_section": {"op_id": "INTEGER", "run_id": "INTEGER", "row_no": "INTEGER", "section_id": "INTEGER",
        "section": "TEXT", "start_row": "INTEGER", "end_row": "INTEGER"},
    "run_info": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "captured_at": "TIMESTAMP", "ingested_at":
        "TIMESTAMP", "label": "TEXT", "file_name": "TEXT", "op_count": "INTEGER", "freq_mhz": "REAL", "arch":
        "TEXT", "trace_matches_eager": "BOOLEAN", "capture_id": "INTEGER", "rank": "INTEGER"},
    "series": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "section": "TEXT", "grouping": "TEXT",
        "key": "TEXT", "device": "INTEGER", "iterations": "INTEGER", "ops": "REAL", "kernel_us": "REAL",
        "kernel_spread_us": "REAL", "op2op_us": "REAL", "op2op_spread_us": "REAL", "fw_us": "REAL", "fw_spread_us":
        "REAL", "span_us": "REAL", "span_spread_us": "REAL", "rank": "INTEGER"},
    "series_section": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "section": "TEXT", "key":
        "TEXT", "iterations": "INTEGER", "ops": "REAL", "kernel_us": "REAL", "op2op_us": "REAL", "fw_us": "REAL",
        "span_us": "REAL", "rank": "INTEGER"},
    "series_block": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "section": "TEXT", "key":
        "TEXT", "iterations": "INTEGER", "ops": "REAL", "kernel_us": "REAL", "op2op_us": "REAL", "fw_us": "REAL",
        "span_us": "REAL", "rank": "INTEGER"},
    "series_layer": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "section": "TEXT", "key":
        "TEXT", "iterations": "INTEGER", "ops": "REAL", "kernel_us": "REAL", "op2op_us": "REAL", "fw_us": "REAL",
        "span_us": "REAL", "rank": "INTEGER"},
    "series_op_code": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "section": "TEXT", "key":
        "TEXT", "iterations": "INTEGER", "ops": "REAL", "kernel_us": "REAL", "op2op_us": "REAL", "fw_us": "REAL",
        "span_us": "REAL", "rank": "INTEGER"},
    "series_category": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "section": "TEXT", "key":
        "TEXT", "iterations": "INTEGER", "ops": "REAL", "kernel_us": "REAL", "op2op_us": "REAL", "fw_us": "REAL",
        "span_us": "REAL", "rank": "INTEGER"},
    "series_device": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "section": "TEXT", "device":
        "INTEGER", "iterations": "INTEGER", "ops": "REAL", "kernel_us": "REAL", "op2op_us": "REAL", "fw_us": "REAL",
        "span_us": "REAL", "rank": "INTEGER"},
    "op_history": {"op_id": "INTEGER", "run_id": "INTEGER", "row_no": "INTEGER", "section": "TEXT", "pos":
        "INTEGER", "iteration": "INTEGER", "iter_pos": "INTEGER", "block": "TEXT", "layer": "TEXT", "hist_block":
        "TEXT", "hist_layer": "TEXT", "hist_how": "TEXT", "op_code": "TEXT", "device_id": "INTEGER", "kernel_us":
        "REAL", "rank": "INTEGER"},
    "op_perf": {"run_id": "INTEGER", "row_no": "INTEGER", "section": "TEXT", "block": "TEXT", "layer": "TEXT",
        "occurrence": "INTEGER", "identity": "TEXT", "device": "INTEGER", "op_code": "TEXT", "label": "TEXT",
        "category": "TEXT", "is_host": "INTEGER", "device_time_us": "REAL", "op2op_us": "REAL", "invalid_duration":
        "INTEGER", "cores": "REAL", "dram_gbs": "REAL", "dram_pct": "REAL", "tflops": "REAL", "flops_pct": "REAL",
        "bound": "TEXT", "bound_analysis": "TEXT", "math_fidelity": "TEXT", "dram_bytes": "REAL",
        "host_duration_ns": "INTEGER", "sub_device": "TEXT", "available_cores": "INTEGER", "rank": "INTEGER"},
    "perf_series": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "identity": "TEXT", "device":
        "INTEGER", "op_code": "TEXT", "category": "TEXT", "bound": "TEXT", "flops_pct": "REAL", "dram_pct": "REAL",
        "tflops": "REAL", "dram_gbs": "REAL", "device_time_us": "REAL", "op2op_us": "REAL", "cores": "REAL",
        "math_fidelity": "TEXT", "sub_device": "TEXT", "available_cores": "INTEGER", "rank": "INTEGER"},
    "perf_sub_device_series": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "rank": "INTEGER",
        "device": "INTEGER", "sub_device": "TEXT", "ops": "INTEGER", "device_time_us": "REAL", "op2op_us": "REAL",
        "worker_cores_min": "INTEGER", "worker_cores_max": "INTEGER"},
    "csv_cell": {"run_id": "INTEGER", "row_no": "INTEGER", "column_name": "TEXT", "position": "INTEGER", "value":
        "TEXT", "number": "REAL"},
    "op_util": {"run_id": "INTEGER", "row_no": "INTEGER", "device": "INTEGER", "op_code": "TEXT", "fpu_util_pct":
        "REAL", "noc_util_pct": "REAL", "multicast_noc_util_pct": "REAL", "dram_bw_util_pct": "REAL",
        "eth_bw_util_pct": "REAL", "npe_cong_impact_pct": "REAL", "sfpu_util_min_pct": "REAL",
        "sfpu_util_median_pct": "REAL", "sfpu_util_max_pct": "REAL", "sfpu_util_grid_pct": "REAL",
        "fpu_util_min_pct": "REAL", "fpu_util_median_pct": "REAL", "fpu_util_max_pct": "REAL", "fpu_util_grid_pct":
        "REAL", "math_util_min_pct": "REAL", "math_util_median_pct": "REAL", "math_util_max_pct": "REAL",
        "math_util_grid_pct": "REAL", "rank": "INTEGER"},
    "op_model": {"run_id": "INTEGER", "row_no": "INTEGER", "device": "INTEGER", "op_code": "TEXT", "pm_ideal_ns":
        "REAL", "pm_compute_ns": "REAL", "pm_bandwidth_ns": "REAL", "pm_req_i_bw": "TEXT", "pm_req_o_bw": "TEXT",
        "rank": "INTEGER"},
    "op_kernel": {"run_id": "INTEGER", "row_no": "INTEGER", "device": "INTEGER", "op_code": "TEXT", "brisc_ns":
        "REAL", "ncrisc_ns": "REAL", "trisc0_ns": "REAL", "trisc1_ns": "REAL", "trisc2_ns": "REAL", "erisc_ns":
        "REAL", "kernel_dm_start_ns": "REAL", "per_core_min_ns": "REAL", "per_core_max_ns": "REAL",
        "per_core_avg_ns": "REAL", "first_to_last_start_ns": "REAL", "cb_wait_front_ns": "REAL",
        "cb_reserve_back_ns": "REAL", "op2op_brnrisc_ns": "REAL", "trace_kernel_ns": "REAL", "trace_fw_ns": "REAL",
        "rank": "INTEGER"},
    "op_dispatch": {"run_id": "INTEGER", "row_no": "INTEGER", "device": "INTEGER", "op_code": "TEXT",
        "host_duration_ns": "REAL", "dispatch_cq_cmd_ns": "REAL", "dispatch_go_wait_ns": "REAL", "rank": "INTEGER"},
    "op_binary": {"run_id": "INTEGER", "row_no": "INTEGER", "device": "INTEGER", "op_code": "TEXT",
        "tensix_dm0_bytes": "REAL", "tensix_dm1_bytes": "REAL", "tensix_compute0_bytes": "REAL",
        "tensix_compute1_bytes": "REAL", "tensix_compute2_bytes": "REAL", "active_eth_dm0_bytes": "REAL",
        "active_eth_dm1_bytes": "REAL", "idle_eth_dm0_bytes": "REAL", "idle_eth_dm1_bytes": "REAL", "rank":
        "INTEGER"},
    "op_program": {"run_id": "INTEGER", "row_no": "INTEGER", "device": "INTEGER", "op_code": "TEXT", "program_hash":
        "TEXT", "program_cache_hit": "INTEGER", "sub_device_id": "REAL", "available_cores": "REAL", "rank":
        "INTEGER"},
    "op_tensor": {"run_id": "INTEGER", "row_no": "INTEGER", "device": "INTEGER", "io": "TEXT", "idx": "INTEGER",
        "w": "INTEGER", "z": "INTEGER", "y": "INTEGER", "x": "INTEGER", "w_pad": "INTEGER", "z_pad": "INTEGER",
        "y_pad": "INTEGER", "x_pad": "INTEGER", "layout": "TEXT", "datatype": "TEXT", "memory": "TEXT", "rank":
        "INTEGER"},
    "op_identity": {"run_id": "INTEGER", "run_time": "TIMESTAMP", "label": "TEXT", "section": "TEXT", "block":
        "TEXT", "layer": "TEXT", "op_code": "TEXT", "occurrence": "INTEGER", "identity": "TEXT", "kernel_us":
        "REAL", "fw_us": "REAL", "op2op_us": "REAL", "cores": "INTEGER", "replay_session": "TEXT", "rank":
        "INTEGER"},
}

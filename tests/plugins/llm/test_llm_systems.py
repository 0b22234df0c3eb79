"""Blackwell systems: b200 / gb200 presets, dgx-b200 and gb200-nvl72 topologies, placement in 72-GPU domains."""

import itertools

import numpy as np
import pytest

from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.plugins.llm import placement
from optmap.plugins.llm.cluster import dgx_b200, gb200_nvl72, group_link
from optmap.system import GroupSpec


def test_blackwell_presets_are_the_datasheets_dense_rates():
    host = load_host()
    b200, gb200 = (host.get("accelerator", n).resolve() for n in ("b200", "gb200"))
    # HGX B200 datasheet (sparse): 4.5 PF bf16, 9 PF fp8, 18 PF fp4 -> dense halves
    assert (b200.flops_per_s("bf16"), b200.flops_per_s("fp8"), b200.flops_per_s("fp4")) == (2.25e15, 4.5e15, 9e15)
    # GB200 NVL72 datasheet (sparse, 72 GPUs): 360 PF bf16, 720 PF fp8 -> 2.5 and 5 PF dense per GPU
    assert (gb200.flops_per_s("bf16"), gb200.flops_per_s("mxfp8")) == (2.5e15, 5e15)
    assert b200.memory_bandwidth == gb200.memory_bandwidth == 8e12  # 8 TB/s HBM3e
    assert {"dgx-b200", "gb200-nvl72"} <= set(host.names("topology"))


def test_nvlink_domains_and_scale_out():
    b = dgx_b200([GroupSpec(load_host().get("accelerator", "b200").resolve(), 16)])
    assert group_link(b, [0, 7]).bandwidth == 900e9 and group_link(b, [0, 8]).bandwidth == 50e9  # 7,200 / 400 Gb/s
    rack = gb200_nvl72([GroupSpec(load_host().get("accelerator", "gb200").resolve(), 144)], domain_gpus=72)
    assert rack.params["gpus_per_node"] == 72 and rack.params["nodes"] == 2
    assert group_link(rack, list(range(0, 72, 9))).bandwidth == 900e9  # any 8 GPUs of one rack: NVLink
    assert group_link(rack, [0, 72]).bandwidth == 50e9
    with pytest.raises(OptmapError, match="domain_gpus"):
        gb200_nvl72([GroupSpec(load_host().get("accelerator", "gb200").resolve(), 8)], domain_gpus=0)
    # by default a job uses 64 GPUs per rack (Slurm segments of 16 four-GPU trays, NVIDIA's advice
    # for jobs of 128+ GPUs): 256 GPUs are 4 domains, and GPUs 0 and 64 meet over InfiniBand
    seg = gb200_nvl72([GroupSpec(load_host().get("accelerator", "gb200").resolve(), 256)])
    assert seg.params["gpus_per_node"] == 64 and seg.params["nodes"] == 4
    assert group_link(seg, [0, 63]).bandwidth == 900e9 and group_link(seg, [0, 64]).bandwidth == 50e9


def _brute(t, d, p, gpn, kind):
    """Enumerate Megatron's groups (tensor innermost) and count members per node directly."""
    ranks = np.arange(t * d * p).reshape(p, d, t)
    groups = ranks.reshape(-1, t) if kind == "tp" else ranks.transpose(0, 2, 1).reshape(-1, d)
    spans, fewest = False, gpn
    for g in groups:
        nodes, counts = np.unique(g // gpn, return_counts=True)
        if len(nodes) > 1:
            spans, fewest = True, min(fewest, counts.min())
    return spans, fewest


@pytest.mark.parametrize("gpn", [8, 72])
def test_closed_form_placement_equals_listing_the_groups(gpn):
    sizes = (1, 2, 3, 4, 6, 8, 9, 12, 16, 24)
    cases = [(t, d, p) for t, d, p in itertools.product(sizes, sizes, (1, 2, 3)) if t * d * p <= 4 * gpn]
    t, d, p = (np.array(x) for x in zip(*cases))
    tp_span, tp_k = placement.tensor_groups(t, d, p, gpn)
    dp_span, dp_k = placement.data_groups(t, d, p, gpn)
    for i, (tt, dd, pp) in enumerate(cases):
        for kind, span, k in (("tp", tp_span, tp_k), ("dp", dp_span, dp_k)):
            want_span, want_k = _brute(tt, dd, pp, gpn, kind)
            assert bool(span[i]) == want_span, (kind, tt, dd, pp)
            if want_span:
                assert int(k[i]) == want_k, (kind, tt, dd, pp)


def test_distinct_group_shapes_match_numpy_unique_rows():
    # the links are priced once per distinct (t, d, p, ep) tuple: the per-column integer key gives
    # numpy's own distinct rows and inverse, also where one radix over every column would pass 2^63
    # (data parallel up to 2^20 with the other sizes small: 2^80 with a single radix)
    from optmap.plugins.llm.cluster import _distinct

    rng = np.random.default_rng(0)
    for high in ((8, 2**20, 128, 256), (2**20, 2**20, 2**20, 2**20)):
        cols = [np.tile(rng.integers(1, h, 200), 3) for h in high]  # every tuple three times
        distinct, inverse = _distinct(*cols)
        rows, want = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
        assert [list(c) for c in distinct] == [list(c) for c in rows.T]
        assert list(inverse) == list(want.ravel())

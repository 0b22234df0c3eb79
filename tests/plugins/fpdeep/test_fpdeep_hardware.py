"""The VC709 / XC7VX690T accelerator and its links (FPDeep §1.2, §6.1, §6.3.3; note §2.3)."""

import pytest

from optmap.errors import OptmapError
from optmap.plugins.fpdeep.hardware import FPGAResources, vc709, vc709_250
from optmap.plugins.hardware.topologies import chain, mesh2d
from optmap.system import GroupSpec


def test_vc709_resources_from_the_datasheet():
    fpga = vc709()
    attrs = fpga.attrs
    # Xilinx 7 Series selection guide: 3,600 DSP48E1, 1,470 x 36 Kb BRAM (36 x 1024 / 8 = 4,608 B each)
    assert attrs["dsp_slices"] == 3600
    assert attrs["bram_bytes"] == 1470 * 4608 == 6_773_760
    assert (attrs["luts"], attrs["flip_flops"], attrs["transceivers"]) == (433_200, 866_400, 80)
    # peak = 2 ops x 3600 DSPs x 200 MHz x 1 MAC/DSP/cycle = 1.44 TFLOP/s
    assert fpga.flops_per_s("fp32") == pytest.approx(1.44e12)
    assert FPGAResources.of(fpga, 0).clock_hz == 200e6
    # VC709 UG887: 2 DDR3 SODIMMs x 4 GB at 1866 MT/s x 8 B = 29.856 GB/s
    assert fpga.memory_bandwidth == pytest.approx(2 * 1866e6 * 8)
    assert fpga.power_watts == pytest.approx(31.6)  # 1197 GOPS / 37.88 GOPS/J (Table 6, VGG-16)


def test_link_variants_150_and_250():
    # 150 Gb/s per FPGA over two chain neighbours: 3 ports x 25 Gb/s = 75 Gb/s per link and direction
    assert vc709().network_bandwidth == pytest.approx(75e9 / 8)
    # 250 Gb/s variant: 5 ports per link, 125 Gb/s; also Fig. 9's 10 ports per board, 5 per 1-D link
    assert vc709_250().network_bandwidth == pytest.approx(125e9 / 8) and vc709_250().name == "vc709-250"
    assert vc709(link_ports=2, port_gbps=28).network_bandwidth == pytest.approx(56e9 / 8)


def test_chain_and_mesh_links_take_the_per_link_rate():
    system = chain([GroupSpec(vc709(), 4)])
    assert [system.link(i, i + 1).bandwidth for i in range(3)] == [pytest.approx(75e9 / 8)] * 3
    mesh = mesh2d([GroupSpec(vc709(), 4)], x_bandwidth_gbps=50, y_bandwidth_gbps=50)
    assert mesh.link(0, 1).bandwidth == pytest.approx(50e9 / 8)


@pytest.mark.parametrize("key", ["link_ports", "port_gbps", "clock_mhz", "board_watts"])
def test_zero_resources_are_refused(key):
    with pytest.raises(OptmapError, match=key):
        vc709(**{key: 0})


def test_a_non_fpga_accelerator_is_named():
    from optmap.plugins.hardware.accelerators import V100

    with pytest.raises(OptmapError, match="device 3 \\('v100'\\) has no attrs.dsp_slices"):
        FPGAResources.of(V100, 3)

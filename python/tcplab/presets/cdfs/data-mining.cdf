# data-mining: the flow-size distribution of the data-mining cluster measured by Greenberg et
# al., "VL2: A Scalable and Flexible Data Center Network", SIGCOMM 2009, Figure 2 ("Mice are
# numerous; 99% of flows are smaller than 100 MB"), as the pFabric authors tabulated it for their
# ns-2 simulations (Alizadeh et al., "pFabric: Minimal Near-Optimal Datacenter Transport", SIGCOMM
# 2013, §5.1 "data mining") in their file CDF_vl2.tcl, redistributed unchanged with PIAS and
# MQ-ECN (github.com/HKUST-SING/MQ-ECN-NS2, scripts/CDF_vl2.tcl) and used by HPCC, Parsimon and m3.
# That table is in packets of 1460 payload bytes (pFabric's meanFlowSize = 5117 * 1460): each size
# below is its packet count x 1460 bytes. Half the flows are one packet (the first two points hold
# the same size: a step). Sizes between points are interpolated linearly. Mean: 7 470 236 bytes
# (5117 packets, as pFabric states).
# Format: SIZE_BYTES CUMULATIVE_PROBABILITY, one point a line; '#' starts a comment.
1460 0
1460 0.5
2920 0.6
4380 0.7
10220 0.8
389820 0.9
3076220 0.95
97333820 0.99
973333820 1

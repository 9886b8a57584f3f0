# web-search: the flow-size distribution of the production web-search cluster measured by
# Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, Figure 4 ("Distribution of flow sizes"
# of background flows), as the pFabric authors tabulated it for their ns-2 simulations (Alizadeh et
# al., "pFabric: Minimal Near-Optimal Datacenter Transport", SIGCOMM 2013, §5.1 "web search") in
# their file CDF_dctcp.tcl, redistributed unchanged with PIAS (Bai et al., NSDI 2015;
# github.com/HKUST-SING/PIAS-NS2, scripts/CDF_dctcp.tcl) and used by HPCC, Parsimon and m3.
# That table is in packets of 1460 payload bytes (pFabric's meanFlowSize = 1138 * 1460): each size
# below is its packet count x 1460 bytes (first column of the .tcl file x 1460; its third column is
# the probability). Sizes between points are interpolated linearly (ns-2's EmpiricalRandomVariable
# with interpolation, as pFabric samples it). Mean: 1 665 831 bytes (1141 packets with linear
# interpolation; pFabric's scripts state 1138).
# Format: SIZE_BYTES CUMULATIVE_PROBABILITY, one point a line; '#' starts a comment.
8760 0
8760 0.15
18980 0.2
27740 0.3
48180 0.4
77380 0.53
194180 0.6
973820 0.7
1946180 0.8
4866180 0.9
9733820 0.97
29200000 1

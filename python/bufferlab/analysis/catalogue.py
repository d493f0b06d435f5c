"""The metric catalogue's names, units and table columns (shared metrics.md): data only.

`metrics` computes the tables; this module only names them, so that what needs their columns and
not their computation (the store's schema, `store.writer`) loads no numpy.
"""

from __future__ import annotations

__all__ = ["FLOW_METRICS", "LINK_METRICS", "NETWORK_METRICS", "FLOW_TABLE", "LINK_TABLE", "NETWORK_TABLE"]

# name -> (unit, definition); the order is the tables' order.
FLOW_METRICS: dict[str, tuple[str, str]] = {
    "mean_throughput_l4": ("Mbps", "bytes newly acknowledged per interval"),
    "mean_throughput_l7": ("Mbps", "bytes delivered in order to the receiving application per interval"),
    "mean_delivery_rate_l4": ("Mbps", "delivery-rate samples (fallback: bytes acknowledged per interval)"),
    "mean_sending_rate_l4": ("Mbps", "payload bytes put on the wire incl. retransmissions per interval"),
    "mean_sending_rate_l7": ("Mbps", "bytes written by the application per interval"),
    "mean_cwnd_l4": ("segments", "congestion window / MSS"),
    "mean_in_flight_l4": ("segments", "bytes in flight (RFC 6675 pipe) / MSS"),
    "mean_srtt_l4": ("ms", "smoothed RTT (RFC 6298)"),
    "mean_est_qdelay_l4": ("ms", "srtt - min RTT seen so far"),
    "mean_idt_ewma_l4": ("ms", "EWMA (gain 1/8) of the inter-departure time of data segments"),
    "mean_network_power_l4": ("Mbps/s", "throughput / srtt"),
    "mean_utility_pf_l4": ("-", "ln(throughput in Mbps)"),
    "mean_utility_mpdf_l4": ("-", "-1 / throughput in Mbps"),
    "mean_utilization_bw_l4": ("-", "throughput / rate of the slowest link on the flow's path"),
    "mean_utilization_bdp_l4": ("-", "in flight / BDP (that rate x the flow's min RTT, in segments)"),
    "mean_one_way_delay_l7": ("ms", "application write to in-order delivery, mean over the bytes of an interval"),
    "mean_recovery_time_l4": ("ms", "mean duration of loss-recovery episodes"),
    "flow_completion_time_l4": ("s", "first SYN to last ACK (or to the end of the run)"),
    "total_retransmissions_l4": ("segments", "retransmitted segments"),
    "total_rtos_l4": ("count", "retransmission timeouts"),
    "loss_rate_l4": ("-", "retransmitted / transmitted segments"),
    "cov_throughput_l4": ("-", "std / mean of the throughput samples"),
    "cov_throughput_l7": ("-", "std / mean of the application throughput samples"),
    "cov_in_flight_l4": ("-", "std / mean of the in-flight samples"),
    "cov_cwnd_l4": ("-", "std / mean of the cwnd samples"),
    "cov_srtt_l4": ("-", "std / mean of the srtt samples"),
}
LINK_METRICS: dict[str, tuple[str, str]] = {
    "mean_qdisc_length_l2": ("packets", "time-average queue length"),
    "max_qdisc_length_l2": ("packets", "largest queue length"),
    "mean_qdisc_delay_l2": ("ms", "sojourn time of dequeued packets"),
    "mean_sending_rate_l1": ("Mbps", "bits put on the link incl. headers / elapsed time"),
    "total_qdisc_drops_l2": ("packets", "drops by the queue discipline (queue full)"),
    "total_random_losses_l1": ("packets", "packets lost by the link's random loss"),
    "utilization_l1": ("-", "busy time / elapsed time (at a shaper's token rate when one limits the link)"),
}
NETWORK_METRICS: dict[str, tuple[str, str]] = {
    "mean_agg_throughput_l4": ("Mbps", "sum over flows of the throughput"),
    "mean_agg_in_flight_l4": ("segments", "sum over flows of the segments in flight"),
    "mean_agg_utility_pf_l4": ("-", "sum over flows of ln(throughput)"),
    "mean_agg_utility_mpdf_l4": ("-", "sum over flows of -1/throughput"),
    "mean_agg_utilization_bw_l4": ("-", "sum over flows of throughput / rate of the run's bottleneck"),
    "mean_agg_utilization_bdp_l4": ("-", "sum over flows of in flight / BDP"),
    "mean_jains_fairness_throughput_l4": ("-", "(sum x)^2 / (n sum x^2)"),
    "mean_entropy_fairness_throughput_l4": ("-", "-sum s ln s, s = x / sum x"),
    "mean_product_fairness_throughput_l4": ("-", "product of the throughputs"),
}


# The columns of the catalogue's tables and their Arrow types (`_core.Table.from_columns`).
FLOW_TABLE: dict[str, str] = {"flow": "UInt32", "name": "Utf8", "src": "Utf8", "dst": "Utf8",
                              **dict.fromkeys(FLOW_METRICS, "Float64"), "delivery_rate_source": "Utf8"}
LINK_TABLE: dict[str, str] = {"channel": "UInt32", "name": "Utf8", "rate_mbps": "Float64", "bottleneck": "Boolean",
                              **dict.fromkeys(LINK_METRICS, "Float64")}
NETWORK_TABLE: dict[str, str] = {"name": "Utf8", **dict.fromkeys(NETWORK_METRICS, "Float64")}

"""analysis: numbers derived from a run's raw result. The run summary (`summary`), the metric
catalogue of metrics.md (`metrics`), seed 000's middlebox monitor (`monitor`) and the packet
formats captures are exported in (`pcap`). Nothing here opens the store or calls the engine."""
